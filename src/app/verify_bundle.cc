#include "app/verify_bundle.h"

#include <fmt/format.h>

#include "app/command.h"
#include "run/machine_info.h"
#include "verify/repro_compare.h"

namespace kgym::app {

std::expected<verify::OpenedBundle, std::string> open_bundle_to_verify(const std::string& file,
                                                                       const verify::VerifyRequest& base) {
  auto bundle = verify::open_bundle(file, base);
  if (!bundle) return bundle;
  const nlohmann::json& p = bundle->provenance;
  nlohmann::json kgym = p.value("kgym", nlohmann::json::object());
  fmt::print("repro: case {} from {} (bundled by kgym {} {} at {})\n",
             bundle->recorded.case_id.empty() ? "(ad hoc)" : bundle->recorded.case_id, file,
             kgym.is_object() ? kgym.value("version", "?") : "?",
             kgym.is_object() ? kgym.value("commit", "?") : "?", p.value("bundled_at", "?"));
  for (const std::string& note : bundle->notes) fmt::print("repro: note: {}\n", note);
  return bundle;
}

int compare_with_bundle(const verify::OpenedBundle& bundle, const CaseResult& reproduced) {
  Config here;
  here.devices = {bundle.request.device};
  here.verifier = bundle.request.config;
  nlohmann::json machine =
      run::machine_info(here, reproduced.environment ? reproduced.environment->torch_version : std::string());
  nlohmann::json recorded_machine = bundle.provenance.value("machine", nlohmann::json());
  verify::ReproComparison c =
      verify::compare_reproduction(bundle.recorded, recorded_machine, reproduced, machine);
  for (const std::string& line : verify::comparison_lines(c)) fmt::print("{}\n", line);
  return c.agrees() ? kExitOk : kExitNotAllPassed;
}

}  // namespace kgym::app
