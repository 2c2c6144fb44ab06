// kgym-box: the last step into every box (docs/config.md "Sandbox"). Started
// by bubblewrap or unshare as the user kgym runs as, it takes away what the
// boxed program could use to leave its box, then execs it:
//
//   kgym-box [--uid N] [--die-with-parent] -- PROGRAM ARG...
//
// 1. the capability bounding set and the ambient set emptied (while still
//    privileged enough to do so);
// 2. with --uid (kgym runs as root): groups cleared, then gid and uid set to
//    N (real, effective and saved), which clears the permitted and effective
//    capabilities; without it the effective, permitted and inheritable sets
//    are cleared as they are, so a box kept at uid 0 holds no capability;
// 3. no_new_privs: no setuid or file-capability program regains any;
// 4. a seccomp filter that fails with EPERM every call that makes or enters
//    namespaces, mounts, changes the root, traces or reads another process's
//    memory, or reaches the kernel keyrings, BPF or userfaultfd (clone3 is
//    refused with ENOSYS, so that C libraries fall back to clone, whose flags
//    the filter can see); calls of another architecture kill the process.
//
// It is a program of its own, small and linked only with libseccomp, so that
// the boxes run no more of kgym than this file.
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "kgym-box: %s: %s\n", what, std::strerror(errno));
  std::_Exit(126);
}

void drop_bounding_and_ambient() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;  // past the kernel's last capability
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM)
      die("PR_CAPBSET_DROP");
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    die("PR_CAP_AMBIENT_CLEAR_ALL");
}

void clear_capability_sets() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capset, &header, data) != 0) die("capset");
}

void become(uid_t uid) {
  if (::setgroups(0, nullptr) != 0) die("setgroups");
  if (::setresgid(uid, uid, uid) != 0) die("setresgid");
  if (::setresuid(uid, uid, uid) != 0) die("setresuid");
}

void deny(scmp_filter_ctx ctx, int syscall, int error = EPERM) {
  if (syscall < 0) return;  // not on this architecture
  if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(error), syscall, 0) != 0) {
    errno = EINVAL;
    die("seccomp_rule_add");
  }
}

void install_filter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) die("seccomp_init");
  // A call of another ABI (i386 int 0x80 on x86-64) kills the process: the
  // rules below name this architecture's numbers only.
  if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
    die("SCMP_FLTATR_ACT_BADARCH");
  for (const char* name : {"unshare",
                           "setns",
                           "mount",
                           "umount2",
                           "pivot_root",
                           "chroot",
                           "ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "bpf",
                           "perf_event_open",
                           "userfaultfd",
                           "open_tree",
                           "move_mount",
                           "fsopen",
                           "fsconfig",
                           "fsmount",
                           "fspick",
                           "mount_setattr",
                           "kexec_load",
                           "kexec_file_load",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "acct",
                           "swapon",
                           "swapoff",
                           "reboot",
                           "quotactl"}) {
    deny(ctx, seccomp_syscall_resolve_name(name));
  }
  deny(ctx, seccomp_syscall_resolve_name("clone3"), ENOSYS);
  constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
                                               CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP};
  for (unsigned long flag : kNamespaceFlags) {
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)) != 0) {
      errno = EINVAL;
      die("seccomp_rule_add clone");
    }
  }
  if (seccomp_load(ctx) != 0) die("seccomp_load");
  seccomp_release(ctx);
}

int usage() {
  std::fprintf(stderr, "usage: kgym-box [--uid N] [--die-with-parent] -- PROGRAM ARG...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  long uid = -1;
  bool die_with_parent = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--uid" && i + 1 < argc) {
      char* end = nullptr;
      uid = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || uid <= 0) return usage();
    } else if (arg == "--die-with-parent") {
      die_with_parent = true;
    } else {
      return usage();
    }
  }
  if (i >= argc) return usage();
  pid_t parent = ::getppid();
  drop_bounding_and_ambient();
  if (uid > 0) {
    become(static_cast<uid_t>(uid));
  }
  clear_capability_sets();
  // Changing the uid clears the parent-death signal (bwrap's
  // --die-with-parent): set it again, and go at once if the parent is gone.
  if (die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("PR_SET_PDEATHSIG");
    if (::getppid() != parent) std::_Exit(137);
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS");
  install_filter();
  ::execvp(argv[i], argv + i);
  std::fprintf(stderr, "kgym-box: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
