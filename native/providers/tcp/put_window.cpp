#include "put_window.h"

#include <algorithm>
#include <iterator>

namespace rvma {

std::deque<PutWindow::Entry>::iterator PutWindow::lowerBound(uint64_t id) {
  return std::lower_bound(outcomes_.begin(), outcomes_.end(), id, [](const Entry& e, uint64_t v) { return e.id < v; });
}

std::deque<PutWindow::Entry>::iterator PutWindow::locate(uint64_t id) {
  if (outcomes_.empty() || id > outcomes_.back().id) return outcomes_.end();
  // The usual case: the put just admitted, settled as soon as its bytes are in.
  if (id == outcomes_.back().id) return std::prev(outcomes_.end());
  auto it = lowerBound(id);
  return it != outcomes_.end() && it->id == id ? it : outcomes_.end();
}

PutWindow::Outcome* PutWindow::find(uint64_t id) {
  auto it = locate(id);
  return it == outcomes_.end() ? nullptr : &it->outcome;
}

void PutWindow::insert(uint64_t id, const Outcome& outcome) {
  if (outcomes_.empty() || id > outcomes_.back().id) outcomes_.push_back(Entry{id, outcome});
  else outcomes_.insert(lowerBound(id), Entry{id, outcome});
}

PutWindow::Admission PutWindow::admit(uint64_t id, bool part, TcpConnection* conn, uint64_t serial) {
  if (id < floor_) return {Admission::Ambiguous};
  Outcome* found = find(id);
  if (!found) {
    if (id < forgottenBelow_) return {Admission::Ambiguous};
    insert(id, Outcome{part ? State::Split : State::Writing, Status::Ok, part ? nullptr : conn, serial});
    trim();
    return {Admission::New};
  }
  Outcome& o = *found;
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
  Outcome* o = find(id);
  if (!o) return;
  o->state = State::Done;
  o->status = status;
  o->writer = nullptr;
}

void PutWindow::cancel(uint64_t id) {
  auto it = locate(id);
  if (it != outcomes_.end() && it->outcome.state == State::Writing) outcomes_.erase(it);
}

std::vector<TcpConnection*> PutWindow::raiseFloor(uint64_t floor) {
  std::vector<TcpConnection*> stale;
  if (floor <= floor_) return stale;
  floor_ = floor;
  for (auto it = outcomes_.begin(); it != outcomes_.end() && it->id < floor; ++it) {
    if (it->outcome.state == State::Writing) stale.push_back(it->outcome.writer);
  }
  splits_.writersBelow(floor, &stale);
  return stale;
}

void PutWindow::dropBelowFloor() {
  while (!outcomes_.empty() && outcomes_.front().id < floor_) outcomes_.pop_front();
  splits_.dropBelow(floor_);
}

// Forgets the oldest settled outcomes beyond the cap. Puts still being written stay: their
// outcome is not known yet.
void PutWindow::trim() {
  while (outcomes_.size() > kMaxOutcomes) {
    auto it = std::find_if(outcomes_.begin(), outcomes_.end(), [](const Entry& e) { return e.outcome.state == State::Done; });
    if (it == outcomes_.end()) return;
    forgottenBelow_ = std::max(forgottenBelow_, it->id + 1);
    outcomes_.erase(it);
  }
}

}  // namespace rvma
