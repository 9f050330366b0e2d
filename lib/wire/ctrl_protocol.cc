#include "wire/ctrl_protocol.h"

#include <charconv>
#include <cstdio>

#include "rina/ina_wire.h"

namespace rina::ina {
namespace {

struct Field {
  std::string_view key;
  std::string_view value;
};

// Splits "VERB k=v k=v" into the verb and fields. Rejects empty keys/values,
// duplicate keys and more than a handful of fields.
bool splitLine(std::string_view line, std::string_view* verb, std::vector<Field>* fields,
               std::string* error) {
  if (line.size() > kMaxCtrlLineBytes) {
    *error = "line too long";
    return false;
  }
  size_t pos = 0;
  bool first = true;
  while (pos < line.size()) {
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    std::string_view tok = line.substr(pos, end - pos);
    pos = end + 1;
    if (tok.empty()) {
      *error = "empty field (double space?)";
      return false;
    }
    if (first) {
      *verb = tok;
      first = false;
      continue;
    }
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == tok.size()) {
      *error = "field is not key=value: " + std::string(tok.substr(0, 64));
      return false;
    }
    Field f{tok.substr(0, eq), tok.substr(eq + 1)};
    for (const Field& g : *fields) {
      if (g.key == f.key) {
        *error = "duplicate field " + std::string(f.key);
        return false;
      }
    }
    if (fields->size() >= 8) {
      *error = "too many fields";
      return false;
    }
    fields->push_back(f);
  }
  if (first) {
    *error = "empty request";
    return false;
  }
  return true;
}

bool parseUnsigned(std::string_view text, uint64_t max, uint64_t* out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v > max) return false;
  *out = v;
  return true;
}

const Field* findField(const std::vector<Field>& fields, std::string_view key) {
  for (const Field& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

// Requires exactly the keys in `keys` (no more, no fewer).
bool checkKeys(const std::vector<Field>& fields, std::initializer_list<std::string_view> keys,
               std::string* error) {
  for (std::string_view k : keys) {
    if (!findField(fields, k)) {
      *error = "missing field " + std::string(k);
      return false;
    }
  }
  if (fields.size() != keys.size()) {
    for (const Field& f : fields) {
      bool known = false;
      for (std::string_view k : keys) known = known || f.key == k;
      if (!known) {
        *error = "unknown field " + std::string(f.key.substr(0, 32));
        return false;
      }
    }
  }
  return true;
}

bool getNumber(const std::vector<Field>& fields, std::string_view key, uint64_t min, uint64_t max,
               uint64_t* out, std::string* error) {
  const Field* f = findField(fields, key);
  if (!f || !parseUnsigned(f->value, max, out) || *out < min) {
    *error = "field " + std::string(key) + " must be an integer in [" + std::to_string(min) + ", " +
             std::to_string(max) + "]";
    return false;
  }
  return true;
}

bool parseMembers(std::string_view text, std::vector<Endpoint>* out, std::string* error) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    Endpoint e;
    if (!parseEndpoint(text.substr(pos, end - pos), &e)) {
      *error =
          "bad member address " + std::string(text.substr(pos, std::min<size_t>(end - pos, 32)));
      return false;
    }
    if (out->size() >= kMaxFanIn) {
      *error = "too many members";
      return false;
    }
    out->push_back(e);
    pos = end + 1;
  }
  return true;
}

// Reads the key=value fields of a reply line that starts with `prefix`.
bool parseReplyFields(std::string_view line, std::string_view prefix, std::vector<Field>* fields) {
  if (line.substr(0, prefix.size()) != prefix) return false;
  std::string_view verb;
  std::string error;
  return splitLine(line.substr(prefix.size()), &verb, fields, &error);
}

}  // namespace

bool parseCtrlRequest(std::string_view line, CtrlRequest* out, std::string* error) {
  std::string_view verb;
  std::vector<Field> fields;
  if (!splitLine(line, &verb, &fields, error)) return false;
  CtrlRequest req;
  uint64_t v = 0;
  if (verb == "STATS") {
    req.verb = CtrlVerb::kStats;
    if (!checkKeys(fields, {}, error)) return false;
  } else if (verb == "ENTRIES") {
    req.verb = CtrlVerb::kEntries;
    if (!checkKeys(fields, {"job"}, error) || !getNumber(fields, "job", 1, 0xFFFF, &v, error)) {
      return false;
    }
    req.job = static_cast<uint16_t>(v);
  } else if (verb == "REGISTER" || verb == "REQUEST" || verb == "RELEASE") {
    req.verb = verb == "REGISTER"  ? CtrlVerb::kRegister
               : verb == "REQUEST" ? CtrlVerb::kRequest
                                   : CtrlVerb::kRelease;
    if (req.verb == CtrlVerb::kRegister) {
      if (!checkKeys(fields, {"job", "token", "fanin", "priority", "slots", "members"}, error)) {
        return false;
      }
    } else if (req.verb == CtrlVerb::kRequest) {
      if (!checkKeys(fields, {"job", "token", "slots"}, error)) return false;
    } else if (!checkKeys(fields, {"job", "token"}, error)) {
      return false;
    }
    if (!getNumber(fields, "job", 1, 0xFFFF, &v, error)) return false;
    req.job = static_cast<uint16_t>(v);
    if (!getNumber(fields, "token", 0, UINT64_MAX, &req.token, error)) return false;
    if (req.verb != CtrlVerb::kRelease) {
      if (!getNumber(fields, "slots", 1, kMaxSlots, &v, error)) return false;
      req.slots = static_cast<uint32_t>(v);
    }
    if (req.verb == CtrlVerb::kRegister) {
      if (!getNumber(fields, "fanin", 1, kMaxFanIn, &v, error)) return false;
      req.fanIn = static_cast<uint8_t>(v);
      if (!getNumber(fields, "priority", 0, 255, &v, error)) return false;
      req.priority = static_cast<uint8_t>(v);
      if (!parseMembers(findField(fields, "members")->value, &req.members, error)) return false;
      if (req.members.size() != req.fanIn) {
        *error = "members lists " + std::to_string(req.members.size()) + " addresses, fanin is " +
                 std::to_string(req.fanIn);
        return false;
      }
    }
  } else {
    *error = "unknown verb " + std::string(verb.substr(0, 32));
    return false;
  }
  *out = std::move(req);
  return true;
}

std::string formatCtrlRequest(const CtrlRequest& req) {
  char buf[160];
  switch (req.verb) {
    case CtrlVerb::kStats:
      return "STATS";
    case CtrlVerb::kEntries:
      return "ENTRIES job=" + std::to_string(req.job);
    case CtrlVerb::kRelease:
      snprintf(buf, sizeof buf, "RELEASE job=%u token=%llu", req.job,
               static_cast<unsigned long long>(req.token));
      return buf;
    case CtrlVerb::kRequest:
      snprintf(buf, sizeof buf, "REQUEST job=%u token=%llu slots=%u", req.job,
               static_cast<unsigned long long>(req.token), req.slots);
      return buf;
    case CtrlVerb::kRegister:
      break;
  }
  snprintf(buf, sizeof buf,
           "REGISTER job=%u token=%llu fanin=%u priority=%u slots=%u members=", req.job,
           static_cast<unsigned long long>(req.token), req.fanIn, req.priority, req.slots);
  std::string line = buf;
  for (size_t i = 0; i < req.members.size(); ++i) {
    if (i) line += ',';
    line += req.members[i].toString();
  }
  return line;
}

bool isTakenReply(std::string_view line) {
  return line.size() > kCtrlTakenReply.size() &&
         line.substr(0, kCtrlTakenReply.size()) == kCtrlTakenReply &&
         line[kCtrlTakenReply.size()] == ' ';
}

std::string formatGrant(const Grant& g) {
  char buf[160];
  snprintf(buf, sizeof buf, "OK GRANT job=%u base=%u length=%u payload=%u port=%u ports=%u", g.job,
           g.base, g.length, g.payloadElems, g.port, g.ports);
  return buf;
}

bool parseGrant(std::string_view line, Grant* out) {
  std::vector<Field> fields;
  if (!parseReplyFields(line, "OK ", &fields)) return false;
  std::string error;
  uint64_t job, base, length, payload, port, ports;
  if (!checkKeys(fields, {"job", "base", "length", "payload", "port", "ports"}, &error) ||
      !getNumber(fields, "job", 1, 0xFFFF, &job, &error) ||
      !getNumber(fields, "base", 0, kMaxSlots, &base, &error) ||
      !getNumber(fields, "length", 0, kMaxSlots, &length, &error) ||
      !getNumber(fields, "payload", 1, kMaxPayloadElems, &payload, &error) ||
      !getNumber(fields, "port", 1, 0xFFFF, &port, &error) ||
      !getNumber(fields, "ports", 1, 256, &ports, &error) || base + length > kMaxSlots) {
    return false;
  }
  *out = Grant{static_cast<uint16_t>(job),    static_cast<uint32_t>(base),
               static_cast<uint32_t>(length), static_cast<uint32_t>(payload),
               static_cast<uint16_t>(port),   static_cast<uint16_t>(ports)};
  return line.substr(0, 9) == "OK GRANT ";
}

std::string formatPreemptNotice(const PreemptNotice& n) {
  char buf[96];
  snprintf(buf, sizeof buf, "NOTICE PREEMPT job=%u base=%u length=%u", n.job, n.base, n.length);
  return buf;
}

bool parsePreemptNotice(std::string_view line, PreemptNotice* out) {
  std::vector<Field> fields;
  if (!parseReplyFields(line, "NOTICE ", &fields)) return false;
  std::string error;
  uint64_t job, base, length;
  if (line.substr(0, 15) != "NOTICE PREEMPT " ||
      !checkKeys(fields, {"job", "base", "length"}, &error) ||
      !getNumber(fields, "job", 1, 0xFFFF, &job, &error) ||
      !getNumber(fields, "base", 0, kMaxSlots, &base, &error) ||
      !getNumber(fields, "length", 1, kMaxSlots, &length, &error)) {
    return false;
  }
  *out = PreemptNotice{static_cast<uint16_t>(job), static_cast<uint32_t>(base),
                       static_cast<uint32_t>(length)};
  return true;
}

}  // namespace rina::ina
