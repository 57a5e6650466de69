// Receiver side of exactly-once delivery over tcp, for one sender incarnation (shared by all
// of its connections): the outcome of each of its puts, so that a put re-sent over a new
// connection after its Ack was lost is answered with its first outcome instead of being
// placed twice. The window is exact, not a guess:
// - it has a name (id), told to the sender on each connection (the Window frame); the sender
//   sends a put again only into the window it first sent it into, so a window never has to
//   guess about puts sent before it existed;
// - the sender's Floor frames say below which id everything is settled; outcomes there are
//   forgotten, and a put below the floor (a stale copy) is refused;
// - at most kMaxOutcomes outcomes are kept; beyond, the oldest settled ones are forgotten,
//   and a re-send of a forgotten id is refused as Ambiguous, never placed again.
// It also holds the sender's split puts in progress (SplitReceiver).
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "split_receiver.h"

namespace rvma {

class PutWindow {
 public:
  static constexpr size_t kMaxOutcomes = 16384;

  PutWindow(MailboxTable& table, uint64_t id) : id_(id), splits_(table) {}

  uint64_t id() const { return id_; }

  struct Admission {
    enum Kind {
      New,        // place it (a whole put is now being written by the connection)
      Answer,     // settled before: answer with `status` and drain
      Ambiguous,  // below the floor or forgotten: refuse with Status::Ambiguous and drain
      Busy,       // another connection is still writing it: that one is stale
      Twice,      // sent twice on one connection, or a part sharing a whole put's id: a protocol error
    } kind;
    Status status = Status::Ok;
    TcpConnection* writer = nullptr;  // Busy
  };
  // Put (or raw write, or a part of a split put) `id` arrives on conn (serial number `serial`).
  Admission admit(uint64_t id, bool part, TcpConnection* conn, uint64_t serial);
  // Its outcome is known: placed (Ok) or refused.
  void settle(uint64_t id, Status status);
  // Its connection died before it was placed (a whole put): a re-send places it anew.
  void cancel(uint64_t id);
  // A Floor frame. Returns the connections still writing puts below the new floor: they are
  // stale (the sender settled those puts) and must be closed before dropBelowFloor().
  std::vector<TcpConnection*> raiseFloor(uint64_t floor);
  void dropBelowFloor();

  SplitReceiver& splits() { return splits_; }

 private:
  enum class State : uint8_t { Writing, Split, Done };
  struct Outcome {
    State state;
    Status status;
    TcpConnection* writer;  // Writing
    uint64_t serial;        // the connection that delivered it (whole puts)
  };
  struct Entry {
    uint64_t id;
    Outcome outcome;
  };
  // Ids arrive in ascending order but for re-sends and stripes: a sorted deque takes the
  // usual one at its end, with no allocation per put (a map allocated a node for each).
  std::deque<Entry>::iterator lowerBound(uint64_t id);
  std::deque<Entry>::iterator locate(uint64_t id);  // its entry, or end()
  Outcome* find(uint64_t id);
  void insert(uint64_t id, const Outcome& outcome);
  void trim();

  uint64_t id_;
  std::deque<Entry> outcomes_;  // sorted by id
  uint64_t floor_ = 0;
  uint64_t forgottenBelow_ = 0;  // ids below this that are not in outcomes_ are unknown
  SplitReceiver splits_;
};

}  // namespace rvma
