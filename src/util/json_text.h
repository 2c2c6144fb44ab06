#pragma once
// The text of a JSON record kgym writes (result.json, state.json, run.json,
// events.jsonl, requests, bundles). Strings in a record may quote bytes kgym
// did not choose (a tool's output in a reason, an agent's command in a
// transcript flag) and are not always whole UTF-8; nlohmann's dump() throws
// on such a string, which would lose the record. Here each invalid byte
// becomes U+FFFD instead.
#include <string>

#include <nlohmann/json.hpp>

namespace kgym::util {

// dump(indent) that never throws for invalid UTF-8. indent -1: one line.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kgym::util
