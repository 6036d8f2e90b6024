// An NVTX v3 tool for test_nvtx: loaded through NVTX_INJECTION64_PATH, it records every range
// push and pop of every domain ("push <name>", "pop") for the test to read back
// (halox_test_nvtx_events). The names are the strings the program registered.
#include <nvtx3/nvToolsExt.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace {
std::mutex mu;
std::deque<std::string> strings;  // registered strings; a handle is the address of one
std::vector<std::string> events;
int domain_tag = 0;

nvtxDomainHandle_t create_domain(const char*) {
  return reinterpret_cast<nvtxDomainHandle_t>(&domain_tag);
}
nvtxStringHandle_t register_string(nvtxDomainHandle_t, const char* s) {
  const std::lock_guard<std::mutex> g(mu);
  strings.emplace_back(s);
  return reinterpret_cast<nvtxStringHandle_t>(&strings.back());
}
int push(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  const std::lock_guard<std::mutex> g(mu);
  std::string name = "?";
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
    name = *reinterpret_cast<const std::string*>(a->message.registered);
  else if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
    name = a->message.ascii;
  events.push_back("push " + name);
  return int(events.size());
}
int pop(nvtxDomainHandle_t) {
  const std::lock_guard<std::mutex> g(mu);
  events.push_back("pop");
  return 0;
}
template <class F>
void set(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (cb == nullptr || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  set(table, size, NVTX_CBID_CORE2_DomainCreateA, &create_domain);
  set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &push);
  set(table, size, NVTX_CBID_CORE2_DomainRangePop, &pop);
  return 1;
}
// The events so far, one per line.
__attribute__((visibility("default"))) const char* halox_test_nvtx_events() {
  static std::string out;
  const std::lock_guard<std::mutex> g(mu);
  out.clear();
  for (const auto& e : events) out += e + "\n";
  return out.c_str();
}
}
