// rlockctl watch's account of a lock, event by event (lock_story.hpp): the meaning comes from
// the event, whatever a later read finds; the read only names the holder, when it came in time.
#include "lock_story.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace {

using rlockctl::lock_story;
using rlockctl::lock_view;

lock_view held_by(std::string owner, std::int64_t count = 1) {
  lock_view v;
  v.name = "l";
  v.kind = rlock::key_kind::reentrant;
  v.holders = {{std::move(owner), count}};
  v.ttl = std::chrono::milliseconds(30000);
  return v;
}

lock_view free_lock() {
  lock_view v;
  v.name = "l";
  return v;
}

/// "kind: text", or "none".
std::string told(const std::optional<rlockctl::lock_change>& c) {
  return c ? c->kind + ": " + c->text : "none";
}

lock_story watching(lock_view first) {
  lock_story story(lock_view{});
  story.next("subscribed", first);
  return story;
}

TEST(lock_story, a_take_read_in_time_names_its_holder) {
  auto story = watching(free_lock());
  EXPECT_EQ(told(story.next("hincrby", held_by("b:1"))), "locked: locked by b:1 (count 1)");
  // Its PEXPIRE, in the same script, is the same step.
  EXPECT_EQ(told(story.next("expire", held_by("b:1"))), "none");
  EXPECT_EQ(told(story.next("del", std::nullopt)), "released: released by b:1 (count 1)");
}

TEST(lock_story, a_take_whose_deletion_came_before_the_read_is_a_take_then_a_release) {
  // The failing run of issue 51: B took the lock and let it go before the watch read it. The
  // HINCRBY is a take, whatever the read shows; the deletion behind it is the release.
  auto story = watching(held_by("a:1"));
  EXPECT_EQ(told(story.next("del", std::nullopt)), "released: released by a:1 (count 1)");
  EXPECT_FALSE(lock_story::wants_read("hincrby", /*deletion_queued=*/true));
  EXPECT_EQ(told(story.next("hincrby", std::nullopt)),
            "locked: taken and released before it could be read");
  // Its own later steps (PEXPIRE, the final HINCRBY -1) tell nothing before its deletion.
  EXPECT_EQ(told(story.next("expire", std::nullopt)), "none");
  EXPECT_EQ(told(story.next("hincrby", std::nullopt)), "none");
  EXPECT_EQ(told(story.next("del", std::nullopt)),
            "released: released (its holder was not read in time)");
  // The next take is a take again, and read in time names its holder.
  EXPECT_EQ(told(story.next("hincrby", held_by("c:1"))), "locked: locked by c:1 (count 1)");
}

TEST(lock_story, a_take_read_after_its_release_is_never_told_as_a_release) {
  // No deletion seen (a server that does not send them), and the read found the lock free.
  auto story = watching(free_lock());
  EXPECT_EQ(told(story.next("hincrby", free_lock())),
            "locked: taken and released before it could be read");
  EXPECT_EQ(told(story.next("hset", free_lock())),
            "locked: taken and released before it could be read");
}

TEST(lock_story, an_expiry_of_an_unread_hold_is_an_expiry) {
  auto story = watching(free_lock());
  EXPECT_EQ(told(story.next("hincrby", std::nullopt)),
            "locked: taken and released before it could be read");
  EXPECT_EQ(told(story.next("expired", std::nullopt)),
            "expired: expired (its holder was not read in time)");
}

TEST(lock_story, holders_that_change_while_held_are_told_from_the_reads) {
  auto story = watching(held_by("a:1"));
  EXPECT_EQ(told(story.next("hincrby", held_by("a:1", 2))),
            "re-entered: re-entered by a:1 (count 2)");
  EXPECT_EQ(told(story.next("hincrby", held_by("a:1", 1))),
            "released-once: released once by a:1 (count 1)");
  // A final unlock's HINCRBY -1 with its deletion behind it: the deletion tells it.
  EXPECT_EQ(told(story.next("hincrby", std::nullopt)), "none");
  EXPECT_EQ(told(story.next("del", std::nullopt)), "released: released by a:1 (count 1)");
}

TEST(lock_story, a_resync_tells_what_changed_while_away) {
  auto story = watching(held_by("a:1"));
  EXPECT_TRUE(lock_story::wants_read("resync", true));
  EXPECT_EQ(told(story.next("resync", free_lock())), "released: released by a:1 (count 1)");
  EXPECT_EQ(told(story.next("resync", free_lock())), "none");
  EXPECT_FALSE(lock_story::wants_read("del", false));
  EXPECT_TRUE(lock_story::wants_read("expire", false));
}

}  // namespace
