// Exchanges of the C interface: built by the domain's typed work (structured.hpp), then driven
// through halo_exchange with nothing but a status check in between.

#include <halox/core/stream.hpp>
#include <halox/exchange/exchange_stats.hpp>

#include "capi/handles.hpp"

using namespace halox;
using namespace halox::capi;

namespace {

halox_exchange& exchange_of(halox_exchange* ex, const char* call) {
  return *need(ex, call, "ex");
}

halox_status create(const halox_domain* dom, const halox_stencil* st, halox_field* const* fields,
                    int count, const halox_options* options, int reverse_op, halox_exchange** out,
                    const char* call) {
  return guard([&] {
    *need(out, call, "out") = nullptr;
    const auto& ops = *need(dom, call, "dom")->ops;
    *out = new halox_exchange{ops.build(st, fields, count, options, reverse_op), std::nullopt, {}};
  });
}

}  // namespace

extern "C" {

halox_status halox_exchange_create(const halox_domain* dom, const halox_stencil* st,
                                   halox_field* const* fields, int count,
                                   const halox_options* options, halox_exchange** out) {
  return create(dom, st, fields, count, options, -1, out, "halox_exchange_create");
}

halox_status halox_reverse_exchange_create(const halox_domain* dom, const halox_stencil* st,
                                           halox_reduction op, halox_field* const* fields,
                                           int count, const halox_options* options,
                                           halox_exchange** out) {
  return create(dom, st, fields, count, options, int(op), out, "halox_reverse_exchange_create");
}

halox_status halox_exchange_destroy(halox_exchange* ex) {
  return guard([&] { delete ex; });
}

halox_status halox_exchange_run(halox_exchange* ex) {
  return guard([&] { exchange_of(ex, "halox_exchange_run").ex.exchange(); });
}

halox_status halox_exchange_start(halox_exchange* ex) {
  return guard([&] {
    auto& x = exchange_of(ex, "halox_exchange_start");
    x.pending.emplace(x.ex.start());
  });
}

halox_status halox_exchange_wait(halox_exchange* ex) {
  return guard([&] {
    auto& x = exchange_of(ex, "halox_exchange_wait");
    detail::require(x.pending.has_value(), "halox_exchange_wait: no exchange was started");
    auto h = *x.pending;
    x.pending.reset();
    h.wait();
  });
}

halox_status halox_exchange_test(halox_exchange* ex, int* done) {
  return guard([&] {
    auto& x = exchange_of(ex, "halox_exchange_test");
    need(done, "halox_exchange_test", "done");
    detail::require(x.pending.has_value(), "halox_exchange_test: no exchange was started");
    *done = x.pending->test() ? 1 : 0;
    if (*done) x.pending.reset();
  });
}

halox_status halox_exchange_schedule(halox_exchange* ex, void* stream) {
  return guard([&] {
    exchange_of(ex, "halox_exchange_schedule").ex.schedule_exchange(static_cast<stream_t>(stream));
  });
}

halox_status halox_exchange_schedule_wait(halox_exchange* ex, void* stream) {
  return guard([&] {
    exchange_of(ex, "halox_exchange_schedule_wait").ex.schedule_wait(static_cast<stream_t>(stream));
  });
}

halox_status halox_exchange_describe(halox_exchange* ex, const char** text) {
  return guard([&] {
    auto& x = exchange_of(ex, "halox_exchange_describe");
    need(text, "halox_exchange_describe", "text");
    x.text = x.ex.describe();
    *text = x.text.c_str();
  });
}

halox_status halox_exchange_stats(halox_exchange* ex, const char** json) {
  return guard([&] {
    auto& x = exchange_of(ex, "halox_exchange_stats");
    need(json, "halox_exchange_stats", "json");
    x.text = x.ex.stats().to_json();
    *json = x.text.c_str();
  });
}

}  // extern "C"
