#include "option_bag.h"

namespace rvma {

const OptionBag::Value* OptionBag::find(const char* key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  read_.insert(it->first);
  return &it->second;
}

bool OptionBag::wrongType(const char* key, const char* type, std::string* error) const {
  *error = group_ + "." + key + " must be " + type;
  return false;
}

bool OptionBag::flag(const char* key, bool* out, std::string* error) const {
  const Value* v = find(key);
  if (!v) return true;
  if (!std::holds_alternative<bool>(*v)) return wrongType(key, "a boolean", error);
  *out = std::get<bool>(*v);
  return true;
}

bool OptionBag::text(const char* key, std::string* out, std::string* error) const {
  const Value* v = find(key);
  if (!v) return true;
  if (!std::holds_alternative<std::string>(*v)) return wrongType(key, "a string", error);
  *out = std::get<std::string>(*v);
  return true;
}

bool OptionBag::allRead(std::string* error) const {
  for (const auto& [key, value] : values_) {
    if (read_.count(key)) continue;
    *error = "unknown option " + group_ + "." + key;
    return false;
  }
  return true;
}

}  // namespace rvma
