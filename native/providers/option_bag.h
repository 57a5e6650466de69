// A provider's option group as the caller gave it (keys to numbers, strings or booleans): the
// addon fills it without knowing the provider, and the provider's folder reads what it knows.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>

namespace rvma {

class OptionBag {
 public:
  using Value = std::variant<double, bool, std::string>;

  OptionBag() = default;
  // group: the option group's name in messages ("tcp" says "tcp.stripes must be a number").
  explicit OptionBag(std::string group) : group_(std::move(group)), given_(true) {}

  void set(std::string key, Value value) { values_[std::move(key)] = std::move(value); }
  // Whether the caller gave the group at all (an absent group reads as its defaults).
  bool given() const { return given_; }

  // key into *out when present. False, with *error set, when it has another type.
  template <typename T>
  bool number(const char* key, T* out, std::string* error) const {
    const Value* v = find(key);
    if (!v) return true;
    if (!std::holds_alternative<double>(*v)) return wrongType(key, "a number", error);
    *out = T(std::get<double>(*v));
    return true;
  }
  bool flag(const char* key, bool* out, std::string* error) const;
  bool text(const char* key, std::string* out, std::string* error) const;
  // After reading: false, with *error set, when the group holds a key nobody read.
  bool allRead(std::string* error) const;

 private:
  const Value* find(const char* key) const;
  bool wrongType(const char* key, const char* type, std::string* error) const;

  std::string group_;
  bool given_ = false;
  std::map<std::string, Value> values_;
  mutable std::set<std::string> read_;
};

}  // namespace rvma
