// One C++ extension whose forward misbehaves in the way `how` selects; the
// fault-injection test (70_sandbox_faults.sh) gives every case its own `how`
// so all cases share one compiled source (one ccache entry).
#include <torch/extension.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

// max(x, 0), or zeros when `wrong`: the answer when the misbehaviour is survived.
torch::Tensor relu(torch::Tensor x, bool wrong) {
  torch::Tensor xc = x.contiguous();
  torch::Tensor y = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < xc.numel(); ++i) out[i] = wrong || in[i] < 0.0f ? 0.0f : in[i];
  return y;
}

torch::Tensor misbehave(torch::Tensor x, int64_t how) {
  switch (how) {
    case 1: {  // segfault
      volatile int* p = nullptr;
      *p = 1;
      break;
    }
    case 2:  // hang
      for (volatile bool forever = true; forever;) {
      }
      break;
    case 3: {  // allocate without bound (one byte touched per block: the address-space limit stops it, not
               // RAM)
      std::vector<char*> blocks;
      for (;;) {
        char* block = static_cast<char*>(std::malloc(64 << 20));
        TORCH_CHECK(block != nullptr, "malloc failed after ", blocks.size() * 64, " MB");
        block[0] = 1;
        blocks.push_back(block);
      }
    }
    case 4:  // fork bomb
      for (;;) ::fork();
    case 5: {  // network
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      TORCH_CHECK(fd >= 0, "socket: ", std::strerror(errno));
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(80);
      ::inet_pton(AF_INET, "1.1.1.1", &addr.sin_addr);
      int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      TORCH_CHECK(rc == 0, "connect: ", std::strerror(errno));
      return relu(x, true);  // reached only with network: a wrong answer
    }
    case 6:  // signal the parent and everything it can reach
      ::kill(::getppid(), SIGKILL);
      ::kill(-1, SIGKILL);
      return relu(x, true);
    case 7:  // leave without a word
      ::_exit(0);
  }
  return relu(x, false);
}
