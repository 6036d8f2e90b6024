// Chains for Python: halox::chain<T> for the element type given at run time. Payloads are 1-D
// contiguous arrays (host: buffer protocol; device: __cuda_array_interface__ or DLPack); what
// arrives comes back as new NumPy arrays (host) or as DeviceArrays over the chain's buffers
// (device: valid until the chain's next round, as in C++).
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <halox/chain/chain_exchange.hpp>

#include "arrays.hpp"
#include "device.hpp"
#include "exchange.hpp"

namespace halox::python {

namespace {

/// A payload that halox's chain rejects (and tells the neighbours of): used where the Python
/// array itself is wrong, so the neighbours fail the round too instead of waiting for it.
constexpr std::size_t rejected_count = std::numeric_limits<std::size_t>::max();

class chain_ops {
 public:
  virtual ~chain_ops() = default;
  virtual void start(py::handle to_left, py::handle to_right, stream_t after, bool scheduled) = 0;
  virtual py::tuple finish(stream_t before, bool scheduled) = 0;
  virtual bool test() = 0;
  virtual std::uint64_t generation() const = 0;
  virtual py::object gather(py::handle mine, std::size_t w, bool from_left) = 0;
  virtual bool in_flight() const = 0;
  virtual int left() const = 0;
  virtual int right() const = 0;
  virtual bool periodic() const = 0;
  virtual bool device() const = 0;
  virtual std::string staging_name() const = 0;
  virtual dtype type() const = 0;
};

template <class T>
class chain_impl final : public chain_ops, public std::enable_shared_from_this<chain_impl<T>> {
 public:
  chain_impl(const boost::mpi::communicator& comm, chain_options o, dtype t)
      : c_(comm, o), type_(t), rank_(comm.rank()) {}

  void start(py::handle to_left, py::handle to_right, stream_t after, bool scheduled) override {
    std::string why;
    const auto l = payload(to_left, "to_left", why), r = payload(to_right, "to_right", why);
    pending_ = py::make_tuple(to_left, to_right);  // read until the round completes
    try {
      py::gil_scoped_release unlocked;
      if (scheduled)
        c_.schedule_exchange(after, l, r);
      else
        handle_.emplace(c_.start(l, r));
      ++generation_;
    } catch (const error&) {
      pending_ = py::none();
      if (!why.empty()) throw error(why);
      throw;
    }
  }

  py::tuple finish(stream_t before, bool scheduled) override {
    chain_result<T> res;
    {
      py::gil_scoped_release unlocked;
      res = scheduled ? c_.schedule_wait(before) : handle_->wait();
    }
    pending_ = py::none();
    return py::make_tuple(result(res.from_left()), result(res.from_right()));
  }

  bool test() override { return handle_ && handle_->test(); }

  std::uint64_t generation() const override { return generation_; }

  py::object gather(py::handle mine, std::size_t w, bool from_left) override {
    std::string why;
    const auto m = payload(mine, "mine", why);
    std::span<const T> got;
    try {
      py::gil_scoped_release unlocked;
      got = from_left ? c_.gather_left(m, w) : c_.gather_right(m, w);
    } catch (const error&) {
      if (!why.empty()) throw error(why);
      throw;
    }
    return result(got);
  }

  bool in_flight() const override { return c_.in_flight(); }
  int left() const override { return c_.left(); }
  int right() const override { return c_.right(); }
  bool periodic() const override { return c_.periodic(); }
  bool device() const override { return c_.space() == memory_space::device; }
  std::string staging_name() const override { return to_string(c_.device_staging()); }
  dtype type() const override { return type_; }

 private:
  /// The payload `obj` as a span; a span halox rejects (and `why` set) where it is wrong.
  std::span<const T> payload(py::handle obj, const char* name, std::string& why) const {
    if (obj.is_none()) return {};
    const std::string what = detail::format("chain payload {}", name);
    try {
      const array_view v = view_of(obj, what, rank_);
      if (v.type != type_)
        fail_on(rank_, "{}: the chain carries {}, the array holds {}", what, dtype_name(type_),
                dtype_name(v.type));
      if (v.space != c_.space())
        fail_on(rank_, "{}: the chain's payloads live in {} memory, the array in {} memory", what,
                to_string(c_.space()), to_string(v.space));
      if (v.ndim() != 1 || (v.shape[0] > 1 && v.strides[0] != index(sizeof(T))))
        fail_on(rank_, "{}: a payload is a 1-D contiguous array (shape {}, strides {})", what,
                v.shape_text(), detail::join(v.strides, ","));
      return {reinterpret_cast<const T*>(v.data), std::size_t(v.shape[0])};
    } catch (const std::exception& e) {
      if (why.empty()) why = std::string(e.what()).substr(std::string("halox: ").size());
      return {static_cast<const T*>(nullptr), rejected_count};
    }
  }

  py::object result(std::optional<std::span<const T>> s) {
    if (!s) return py::none();
    return result(*s);
  }
  py::object result(std::span<const T> s) {
    std::vector<index> shape{index(s.size())}, strides{index(sizeof(T))};
    if (device()) {
      auto* p = reinterpret_cast<std::byte*>(const_cast<T*>(s.data()));
      return py::cast(device_array(this->shared_from_this(), nullptr, p, type_, shape, strides,
                                   gpu::current_device()));
    }
    // A copy: the chain's buffers are reused by its next round.
    auto memory = std::shared_ptr<std::byte>(new std::byte[s.size_bytes() + 1],
                                             std::default_delete<std::byte[]>());
    std::memcpy(memory.get(), s.data(), s.size_bytes());
    auto own = std::make_shared<owned_field>(owned_field{type_, -1, memory});
    return numpy_array(own, memory.get(), type_, shape, strides);
  }

  chain<T> c_;
  dtype type_;
  int rank_;
  std::optional<chain_handle<T>> handle_;
  py::object pending_ = py::none();
  std::uint64_t generation_ = 0;  // rounds started: a handle knows whether it is the latest
};

struct py_chain {
  std::shared_ptr<chain_ops> c;
};

struct py_chain_handle {
  py::object owner;  // the Chain
  std::shared_ptr<chain_ops> c;
  std::uint64_t generation;
  py::object wait() {
    if (generation != c->generation())
      throw error("wait() on the handle of an earlier chain round; that round's data is gone");
    return c->finish(nullptr, false);
  }
  bool test() { return generation != c->generation() || c->test(); }
};

py_chain make_chain(py::handle comm, py::handle type, bool periodic, bool device,
                    std::size_t max_elements, py::handle staging) {
  const auto bc = boost_comm(comm);
  dtype t{};
  chain_options o;
  collective(bc, [&] {
    t = dtype_from(type);
    py::dict d;
    d["device_staging"] = staging;
    o.device_staging = options_from(d, bc.rank()).device_staging;
  });
  o.periodic = periodic;
  o.space = device ? memory_space::device : memory_space::host;
  o.max_elements = max_elements;
  return py_chain{with_dtype(t, [&]<class T>() -> std::shared_ptr<chain_ops> {
    return std::make_shared<chain_impl<T>>(bc, o, t);
  })};
}

py_chain_handle start_round(py::object self, py::handle to_left, py::handle to_right) {
  auto& ch = self.cast<py_chain&>();
  ch.c->start(to_left, to_right, nullptr, false);
  return py_chain_handle{self, ch.c, ch.c->generation()};
}

/// Chain: construction and the calls that move data.
void bind_chain_calls(py::class_<py_chain>& c) {
  c.def(
       "exchange",
       [](py_chain& ch, py::handle to_left, py::handle to_right) {
         ch.c->start(to_left, to_right, nullptr, false);
         return ch.c->finish(nullptr, false);
       },
       py::arg("to_left") = py::none(), py::arg("to_right") = py::none(), R"doc(
One round: sends ``to_left`` to the left neighbour and ``to_right`` to the right one (None or
empty: nothing) and returns ``(from_left, from_right)``: what the neighbours sent, None where
there is no such neighbour (the ends of a non-periodic chain).)doc")
      .def("start", &start_round, py::arg("to_left") = py::none(), py::arg("to_right") = py::none(),
           "Split-phase round: returns a ChainHandle; the payloads must not change until its "
           "wait().")
      .def(
          "schedule_exchange",
          [](py_chain& ch, py::handle stream, py::handle to_left, py::handle to_right) {
            ch.c->start(to_left, to_right, stream_from(stream), true);
          },
          py::arg("stream"), py::arg("to_left") = py::none(), py::arg("to_right") = py::none(),
          "Stream-ordered round, step one (device chains): the payloads are read after the work on "
          "``stream``.")
      .def(
          "schedule_wait",
          [](py_chain& ch, py::handle stream) { return ch.c->finish(stream_from(stream), true); },
          py::arg("stream"), R"doc(
Stream-ordered round, step two: returns ``(from_left, from_right)``; their data is valid for
work enqueued on ``stream`` afterwards.)doc")
      .def(
          "gather_left",
          [](py_chain& ch, py::handle mine, std::size_t w) { return ch.c->gather(mine, w, true); },
          py::arg("mine"), py::arg("w"), R"doc(
The last min(w, available) elements before this rank's slice ``mine`` in chain order (the
tails of the slices to the left, nearest last). Collective; every rank passes the same w.)doc")
      .def(
          "gather_right",
          [](py_chain& ch, py::handle mine, std::size_t w) { return ch.c->gather(mine, w, false); },
          py::arg("mine"), py::arg("w"),
          "As gather_left, mirrored: the first elements after ``mine``.");
}

/// Chain: what a chain is.
void bind_chain_properties(py::class_<py_chain>& c) {
  c.def_property_readonly("in_flight", [](const py_chain& ch) { return ch.c->in_flight(); })
      .def_property_readonly(
          "left", [](const py_chain& ch) { return ch.c->left(); },
          "The left neighbour's rank, or -1 at a non-periodic end.")
      .def_property_readonly("right", [](const py_chain& ch) { return ch.c->right(); })
      .def_property_readonly("periodic", [](const py_chain& ch) { return ch.c->periodic(); })
      .def_property_readonly("device", [](const py_chain& ch) { return ch.c->device(); })
      .def_property_readonly(
          "dtype", [](const py_chain& ch) { return std::string(dtype_name(ch.c->type())); })
      .def_property_readonly(
          "device_staging", [](const py_chain& ch) { return ch.c->staging_name(); },
          "How a device chain's messages travel ('nccl' or 'host_staged'); 'auto' for host "
          "chains.");
}

}  // namespace

void bind_chain(py::module_& m) {
  py::class_<py_chain_handle>(m, "ChainHandle", "The in-flight part of a split-phase chain round.")
      .def("wait", &py_chain_handle::wait,
           "Completes the round (GIL released) and returns (from_left, from_right).")
      .def("test", &py_chain_handle::test,
           "Progress without blocking; True once the round is complete.");

  py::class_<py_chain> c(m, "Chain", R"doc(
A 1-D chain over the ranks of ``comm`` in rank order, exchanging variable-size payloads with the
left and right neighbour in rounds (docs/chain.md). Collective: every rank makes it with the
same ``dtype``, ``periodic`` and ``max_elements``, and runs the same sequence of rounds.
``device=True``: payloads are device arrays and what arrives is in device memory.)doc");
  c.def(py::init(&make_chain), py::arg("comm"), py::arg("dtype") = "float64", py::kw_only(),
        py::arg("periodic") = false, py::arg("device") = false, py::arg("max_elements") = 0,
        py::arg("device_staging") = "auto");
  bind_chain_calls(c);
  bind_chain_properties(c);
}

}  // namespace halox::python
