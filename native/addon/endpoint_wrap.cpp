#include "endpoint_wrap.h"

#include <cstring>

#include "convert.h"

namespace rvma::addon {
namespace {

// Runs on the JS thread once per wake-up: hands the whole batch of events to JS.
void deliverEvents(napi_env env, napi_value callback, void* context, void*) {
  if (!env) return;  // the function is being torn down
  auto engine = static_cast<std::weak_ptr<Engine>*>(context)->lock();
  if (!engine) return;
  std::vector<Event> events = engine->drain();
  if (events.empty()) return;
  Napi::Env e(env);
  Napi::HandleScope scope(e);
  size_t words = events.size() * Event::kWords;
  auto buffer = Napi::ArrayBuffer::New(e, words * sizeof(uint64_t));
  std::memcpy(buffer.Data(), events.data(), words * sizeof(uint64_t));
  napi_value array;
  napi_create_typedarray(env, napi_biguint64_array, words, buffer, 0, &array);
  napi_value undefined;
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, callback, 1, &array, nullptr);
}

void finalizeContext(napi_env, void* data, void*) { delete static_cast<std::weak_ptr<Engine>*>(data); }

Napi::Value statusError(const Napi::Env& env, Status status, const char* message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("rvmaStatus", Napi::Number::New(env, double(status)));
  error.ThrowAsJavaScriptException();
  return env.Undefined();
}

}  // namespace

Napi::Function EndpointWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeEndpoint",
                     {
                         InstanceMethod<&EndpointWrap::OpenMailbox>("openMailbox"),
                         InstanceMethod<&EndpointWrap::CloseMailbox>("closeMailbox"),
                         InstanceMethod<&EndpointWrap::Post>("post"),
                         InstanceMethod<&EndpointWrap::IncEpoch>("incEpoch"),
                         InstanceMethod<&EndpointWrap::Put>("put"),
                         InstanceMethod<&EndpointWrap::CompletionPage>("completionPage"),
                         InstanceMethod<&EndpointWrap::OpenCount>("openCount"),
                         InstanceMethod<&EndpointWrap::Ref>("ref"),
                         InstanceMethod<&EndpointWrap::Unref>("unref"),
                         InstanceMethod<&EndpointWrap::Close>("close"),
                     });
}

// new NativeEndpoint(nodeId: string, progress: 0 | 1, onEvents: (events: BigUint64Array) => void)
EndpointWrap::EndpointWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EndpointWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsFunction()) {
    typeError(env, "NativeEndpoint(nodeId, progress, onEvents)");
    return;
  }
  EngineOptions options;
  options.nodeId = info[0].As<Napi::String>().Utf8Value();
  options.progress = info[1].As<Napi::Number>().Int32Value() == 1 ? ProgressMode::Thread : ProgressMode::Loop;
  Status status = Status::Ok;
  try {
    engine_ = Engine::create(options, &status);
  } catch (const std::exception& e) {
    statusError(env, Status::InvalidArgument, e.what());
    return;
  }
  if (!engine_) {
    statusError(env, status, "node id already in use by another endpoint in this process");
    return;
  }
  auto* context = new std::weak_ptr<Engine>(engine_);
  napi_value name = Napi::String::New(env, "rvma.events");
  napi_status s = napi_create_threadsafe_function(env, info[2], nullptr, name, 0, 1, context, finalizeContext,
                                                  context, deliverEvents, &wake_);
  if (s != napi_ok) {
    delete context;
    engine_->close();
    engine_.reset();
    typeError(env, "could not create the completion wake-up");
    return;
  }
  napi_unref_threadsafe_function(env, wake_);  // JS refs it while something waits
  napi_threadsafe_function wake = wake_;
  engine_->setWake([wake] { napi_call_threadsafe_function(wake, nullptr, napi_tsfn_nonblocking); });
}

EndpointWrap::~EndpointWrap() { shutdown(); }

void EndpointWrap::shutdown() {
  if (engine_) engine_->close();  // after this no thread calls wake_
  engine_.reset();
  if (wake_) napi_release_threadsafe_function(wake_, napi_tsfn_abort);
  wake_ = nullptr;
}

// openMailbox(vaddr: bigint, epochType: 0|1, threshold: bigint, maxBuffers: number) -> [id, slot] | status
Napi::Value EndpointWrap::OpenMailbox(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr, threshold;
  if (info.Length() < 4 || !toU64(info[0], &vaddr) || !info[1].IsNumber() || !toU64(info[2], &threshold) ||
      !info[3].IsNumber()) {
    return typeError(env, "openMailbox(vaddr, epochType, threshold, maxBuffers)");
  }
  MailboxConfig cfg;
  cfg.epochType = info[1].As<Napi::Number>().Int32Value() == 1 ? EpochType::Ops : EpochType::Bytes;
  cfg.threshold = threshold;
  cfg.maxBuffers = info[3].As<Napi::Number>().Uint32Value();
  OpenedMailbox opened;
  Status s;
  try {
    s = engine_->table().open(vaddr, cfg, &opened);
  } catch (const std::bad_alloc&) {
    return statusError(env, Status::InvalidArgument, "out of memory opening a mailbox");
  }
  if (!ok(s)) return Napi::Number::New(env, double(s));
  Napi::Array result = Napi::Array::New(env, 2);
  result.Set(0u, Napi::Number::New(env, opened.id));
  result.Set(1u, Napi::Number::New(env, opened.slot));
  return result;
}

// closeMailbox(vaddr) -> 1 released now | 0 release event follows | -status
Napi::Value EndpointWrap::CloseMailbox(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  uint64_t vaddr;
  if (info.Length() < 1 || !toU64(info[0], &vaddr)) return typeError(env, "closeMailbox(vaddr)");
  bool released = false;
  Status s = engine_->table().close(vaddr, &released);
  return Napi::Number::New(env, ok(s) ? (released ? 1 : 0) : -double(s));
}

// post(vaddr, bytes: ArrayBufferView, threshold: bigint) -> bufferIndex | -status
Napi::Value EndpointWrap::Post(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  uint64_t vaddr, threshold;
  uint8_t* data;
  size_t len;
  if (info.Length() < 3 || !toU64(info[0], &vaddr) || !toBytes(info[1], &data, &len) ||
      !toU64(info[2], &threshold)) {
    return typeError(env, "post(vaddr, bytes, threshold)");
  }
  uint64_t index = 0;
  Status s;
  try {
    s = engine_->table().post(vaddr, data, len, threshold, &index);
  } catch (const std::bad_alloc&) {
    return statusError(env, Status::InvalidArgument, "out of memory posting a buffer");
  }
  return Napi::Number::New(env, ok(s) ? double(index) : -double(s));
}

// incEpoch(vaddr) -> status
Napi::Value EndpointWrap::IncEpoch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr;
  if (info.Length() < 1 || !toU64(info[0], &vaddr)) return typeError(env, "incEpoch(vaddr)");
  return Napi::Number::New(env, double(engine_->table().incEpoch(vaddr)));
}

// put(putId: number, peer: string, vaddr: bigint, data: ArrayBufferView, offset: bigint, append: boolean) -> status
Napi::Value EndpointWrap::Put(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr, offset;
  uint8_t* data;
  size_t len;
  if (info.Length() < 6 || !info[0].IsNumber() || !info[1].IsString() || !toU64(info[2], &vaddr) ||
      !toBytes(info[3], &data, &len) || !toU64(info[4], &offset) || !info[5].IsBoolean()) {
    return typeError(env, "put(putId, peer, vaddr, data, offset, append)");
  }
  PutRequest req{uint64_t(info[0].As<Napi::Number>().Int64Value()), info[1].As<Napi::String>().Utf8Value(), vaddr,
                 data, len, Placement{info[5].As<Napi::Boolean>().Value(), offset}};
  Status s;
  try {
    s = engine_->put(std::move(req));
  } catch (const std::bad_alloc&) {
    return statusError(env, Status::InvalidArgument, "out of memory queueing a put");
  }
  return Napi::Number::New(env, double(s));
}

// completionPage(index) -> ArrayBuffer over that page of completion words (kept alive by the view)
Napi::Value EndpointWrap::CompletionPage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) return typeError(env, "completionPage(index)");
  auto page = engine_->table().completionPage(info[0].As<Napi::Number>().Uint32Value());
  if (!page) return env.Undefined();
  auto* hold = new std::shared_ptr<rvma::CompletionPage>(page);
  return Napi::ArrayBuffer::New(
      env, page->data(), rvma::CompletionPage::kBytes,
      [](Napi::Env, void*, std::shared_ptr<rvma::CompletionPage>* held) { delete held; }, hold);
}

Napi::Value EndpointWrap::OpenCount(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), engine_ ? double(engine_->table().openCount()) : 0);
}

Napi::Value EndpointWrap::Ref(const Napi::CallbackInfo& info) {
  if (wake_) napi_ref_threadsafe_function(info.Env(), wake_);
  return info.Env().Undefined();
}

Napi::Value EndpointWrap::Unref(const Napi::CallbackInfo& info) {
  if (wake_) napi_unref_threadsafe_function(info.Env(), wake_);
  return info.Env().Undefined();
}

Napi::Value EndpointWrap::Close(const Napi::CallbackInfo& info) {
  shutdown();
  return info.Env().Undefined();
}

}  // namespace rvma::addon
