// Activity tracing (Note [Activity tracing] in tracer.h).
#include <algorithm>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using namespace mlu;
using namespace mlu_test;

struct Collected {
  std::vector<mluActivity> activities;
  std::vector<mluAnnotation> annotations;
};

Collected stop_and_collect() {
  Collected c;
  EXPECT_EQ(mluTracerStop(), mluSuccess);
  EXPECT_EQ(mluTracerCollect(&c.activities, &c.annotations), mluSuccess);
  return c;
}

TEST(Tracer, RecordsKernelsWithTheirQueueTimesAndCorrelation) {
  ScopedQueue queue;
  ASSERT_EQ(mluTracerStart(), mluSuccess);
  mluTracerPushCorrelation(41);
  ASSERT_EQ(mluLaunchTask(queue.get(), "first", [] { std::this_thread::sleep_for(1ms); }), mluSuccess);
  mluTracerPopCorrelation();
  ASSERT_EQ(mluLaunchSmallTask(queue.get(), "second", [] {}), mluSuccess);
  Collected c = stop_and_collect();
  ASSERT_EQ(c.activities.size(), 2u);
  EXPECT_STREQ(c.activities[0].name, "first");
  EXPECT_EQ(c.activities[0].correlation, 41u);
  EXPECT_EQ(c.activities[0].queue, queue.get());
  EXPECT_EQ(c.activities[0].kind, mluActivityKind::Kernel);
  EXPECT_GE(c.activities[0].end_ns - c.activities[0].start_ns, 1000000);
  EXPECT_STREQ(c.activities[1].name, "second");
  EXPECT_EQ(c.activities[1].correlation, 0u);
  EXPECT_GE(c.activities[1].start_ns, c.activities[0].end_ns);  // queue order
}

TEST(Tracer, RecordsNothingWhenOffAndSkipsInternalTasks) {
  ScopedQueue queue;
  ScopedEvent event;
  ASSERT_EQ(mluLaunchTask(queue.get(), "untraced", [] {}), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue.get()), mluSuccess);
  ASSERT_EQ(mluTracerStart(), mluSuccess);
  ASSERT_EQ(mluEventRecord(event.get(), queue.get()), mluSuccess);
  DeviceBuffer a(64), b(64);
  ASSERT_EQ(mluMemcpyAsync(b.get(), a.get(), 64, mluMemcpyDeviceToDevice, queue.get()), mluSuccess);
  Collected c = stop_and_collect();
  ASSERT_EQ(c.activities.size(), 1u);
  EXPECT_EQ(c.activities[0].kind, mluActivityKind::Memcpy);
  ASSERT_EQ(mluLaunchTask(queue.get(), "after stop", [] {}), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue.get()), mluSuccess);
  std::vector<mluActivity> later;
  std::vector<mluAnnotation> notes;
  ASSERT_EQ(mluTracerCollect(&later, &notes), mluSuccess);
  EXPECT_TRUE(later.empty());
}

TEST(Tracer, RangesTagTasksAndMarksRunInQueueOrder) {
  ScopedQueue queue;
  EXPECT_EQ(mluTracerRangePop(), -1);
  ASSERT_EQ(mluTracerStart(), mluSuccess);
  EXPECT_EQ(mluTracerRangePush("outer"), 0);
  EXPECT_EQ(mluTracerRangePush("inner"), 1);
  ASSERT_EQ(mluLaunchTask(queue.get(), "tagged", [] {}), mluSuccess);
  EXPECT_EQ(mluTracerRangePop(), 1);
  ASSERT_EQ(mluTracerMark(queue.get(), "here"), mluSuccess);
  EXPECT_EQ(mluTracerRangePop(), 0);
  Collected c = stop_and_collect();
  ASSERT_EQ(c.annotations.size(), 3u);
  ASSERT_EQ(c.activities.size(), 2u);
  const auto named = [&](uint64_t id) {
    auto it = std::find_if(c.annotations.begin(), c.annotations.end(), [&](const auto& a) { return a.id == id; });
    return it == c.annotations.end() ? std::string("?") : it->name;
  };
  EXPECT_EQ(named(c.activities[0].annotation), "inner");
  EXPECT_EQ(c.activities[1].kind, mluActivityKind::Marker);
  EXPECT_EQ(named(c.activities[1].annotation), "here");
  EXPECT_GE(c.activities[1].start_ns, c.activities[0].end_ns);
  for (const mluAnnotation& a : c.annotations) EXPECT_GE(a.pop_ns, a.push_ns) << a.name;
}

}  // namespace
