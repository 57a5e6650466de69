#include "put_window.h"

namespace rvma {

PutWindow::Admission PutWindow::admit(uint64_t id, bool part, TcpConnection* conn, uint64_t serial) {
  if (id < floor_) return {Admission::Ambiguous};
  auto it = outcomes_.find(id);
  if (it == outcomes_.end()) {
    if (id < forgottenBelow_) return {Admission::Ambiguous};
    outcomes_.emplace(id, Outcome{part ? State::Split : State::Writing, Status::Ok, part ? nullptr : conn, serial});
    trim();
    return {Admission::New};
  }
  Outcome& o = it->second;
  switch (o.state) {
    case State::Writing:
      if (part || o.serial == serial) return {Admission::Twice};
      return {Admission::Busy, Status::Ok, o.writer};
    case State::Split:
      return part ? Admission{Admission::New} : Admission{Admission::Twice};
    case State::Done:
      if (!part && o.serial == serial) return {Admission::Twice};
      return {Admission::Answer, o.status};
  }
  return {Admission::Twice};
}

void PutWindow::settle(uint64_t id, Status status) {
  auto it = outcomes_.find(id);
  if (it == outcomes_.end()) return;
  it->second.state = State::Done;
  it->second.status = status;
  it->second.writer = nullptr;
}

void PutWindow::cancel(uint64_t id) {
  auto it = outcomes_.find(id);
  if (it != outcomes_.end() && it->second.state == State::Writing) outcomes_.erase(it);
}

std::vector<TcpConnection*> PutWindow::raiseFloor(uint64_t floor) {
  std::vector<TcpConnection*> stale;
  if (floor <= floor_) return stale;
  floor_ = floor;
  for (auto it = outcomes_.begin(); it != outcomes_.end() && it->first < floor; ++it) {
    if (it->second.state == State::Writing) stale.push_back(it->second.writer);
  }
  splits_.writersBelow(floor, &stale);
  return stale;
}

void PutWindow::dropBelowFloor() {
  outcomes_.erase(outcomes_.begin(), outcomes_.lower_bound(floor_));
  splits_.dropBelow(floor_);
}

// Forgets the oldest settled outcomes beyond the cap. Puts still being written stay: their
// outcome is not known yet.
void PutWindow::trim() {
  for (auto it = outcomes_.begin(); outcomes_.size() > kMaxOutcomes && it != outcomes_.end();) {
    if (it->second.state != State::Done) {
      ++it;
      continue;
    }
    if (it->first >= forgottenBelow_) forgottenBelow_ = it->first + 1;
    it = outcomes_.erase(it);
  }
}

}  // namespace rvma
