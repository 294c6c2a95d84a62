// The HTTP face of the fake API server: routing, list, watch streams, faults.
#include <httplib.h>
#include <algorithm>
#include <chrono>
#include <thread>
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/api/yaml.h"
#include "controller/client/kube_errors.h"
#include "tests/controller/fake_api_server.h"

namespace orca::controller::testing {
namespace {

// One requirement of a label selector: key, op ("=", "!=", "exists"), value.
struct Requirement {
  std::string key;
  std::string op;
  std::string value;
};

std::vector<Requirement> ParseSelector(const std::string& selector) {
  std::vector<Requirement> out;
  for (absl::string_view part : absl::StrSplit(selector, ',', absl::SkipEmpty())) {
    std::string p(part);
    if (size_t ne = p.find("!="); ne != std::string::npos) {
      out.push_back({p.substr(0, ne), "!=", p.substr(ne + 2)});
    } else if (size_t eq = p.find("=="); eq != std::string::npos) {
      out.push_back({p.substr(0, eq), "=", p.substr(eq + 2)});
    } else if (size_t e = p.find('='); e != std::string::npos) {
      out.push_back({p.substr(0, e), "=", p.substr(e + 1)});
    } else {
      out.push_back({p, "exists", ""});
    }
  }
  return out;
}

bool Matches(const Json& obj, const std::vector<Requirement>& sel) {
  const Json* labels = nullptr;
  if (obj.contains("metadata") && obj["metadata"].contains("labels")) {
    labels = &obj["metadata"]["labels"];
  }
  for (const Requirement& r : sel) {
    bool has = labels != nullptr && labels->contains(r.key);
    std::string v = has ? (*labels)[r.key].get<std::string>() : "";
    if (r.op == "exists" && !has) return false;
    if (r.op == "=" && (!has || v != r.value)) return false;
    if (r.op == "!=" && has && v == r.value) return false;
  }
  return true;
}

Json ValueAt(const Json& obj, const std::string& path) {
  Json::json_pointer ptr(path);
  return obj.contains(ptr) ? obj[ptr] : Json();
}

}  // namespace

struct FakeApiServer::WatchState {
  std::string plural;
  std::string ns;
  std::vector<Requirement> selector;
  int64_t next_rv = 0;
  absl::Time deadline;
  absl::Time last_bookmark;
  bool bookmarks = false;
  int drop_generation = 0;
  std::vector<std::string> initial;
  bool finish_after_initial = false;
};

void FakeApiServer::Handle(const std::string& method, const void* request, void* response) {
  const auto& req = *static_cast<const httplib::Request*>(request);
  auto& res = *static_cast<httplib::Response*>(response);
  if (latency_ > absl::ZeroDuration()) absl::SleepFor(latency_);
  auto reply = [&](const absl::StatusOr<Json>& r) {
    if (r.ok()) {
      res.status = 200;
      res.set_content(r->dump(), "application/json");
    } else {
      res.status = HttpStatusFromStatus(r.status());
      res.set_content(StatusObject(r.status()).dump(), "application/json");
    }
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back({method, req.path, req.get_header_value("User-Agent"), res.status});
  };
  if (!options_.required_token.empty() &&
      req.get_header_value("Authorization") != "Bearer " + options_.required_token) {
    reply(absl::UnauthenticatedError("Unauthorized"));
    return;
  }
  // Parse /api/v1/... or /apis/<group>/<version>/...
  std::vector<std::string> parts = absl::StrSplit(req.path, '/', absl::SkipEmpty());
  std::string prefix;
  size_t i;
  if (parts.size() >= 2 && parts[0] == "api") {
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    prefix = absl::StrCat(parts[1], "/", parts[2], "/");
    i = 3;
  } else {
    reply(absl::NotFoundError("the server could not find the requested resource"));
    return;
  }
  std::string ns;
  if (parts.size() > i + 1 && parts[i] == "namespaces") {
    ns = parts[i + 1];
    i += 2;
  }
  if (parts.size() <= i) {
    reply(absl::NotFoundError("the server could not find the requested resource"));
    return;
  }
  std::string plural = prefix + parts[i];
  std::string name = parts.size() > i + 1 ? parts[i + 1] : "";
  std::string sub = parts.size() > i + 2 ? parts[i + 2] : "";
  const ResourceInfo* info = Info(plural);
  bool watch = method == "GET" &&
               (req.get_param_value("watch") == "true" || req.get_param_value("watch") == "1");
  std::string manager =
      req.has_param("fieldManager") ? req.get_param_value("fieldManager") : "user";

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!watch && fail_next_ > 0) {
      --fail_next_;
      res.status = fail_status_;
      res.set_content(
          R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected failure","reason":"InternalError","code":)" +
              std::to_string(fail_status_) + "}",
          "application/json");
      requests_.push_back({method, req.path, req.get_header_value("User-Agent"), res.status});
      return;
    }
    if (method != "GET" && method != "DELETE" && conflict_next_ > 0 && sub != "scale") {
      --conflict_next_;
      res.status = 409;
      res.set_content(StatusObject(absl::AbortedError("injected conflict")).dump(),
                      "application/json");
      requests_.push_back({method, req.path, req.get_header_value("User-Agent"), res.status});
      return;
    }
  }
  if (info == nullptr) {
    reply(absl::NotFoundError(
        absl::StrCat("the server could not find the requested resource (", plural, ")")));
    return;
  }

  if (watch) {
    auto w = std::make_shared<WatchState>();
    w->plural = plural;
    w->ns = ns;
    w->selector = ParseSelector(req.get_param_value("labelSelector"));
    w->bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    int timeout = 300;
    if (req.has_param("timeoutSeconds"))
      (void)absl::SimpleAtoi(req.get_param_value("timeoutSeconds"), &timeout);
    w->deadline = absl::Now() + absl::Seconds(timeout);
    w->last_bookmark = absl::Now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back({method, req.path, req.get_header_value("User-Agent"), 200});
      w->drop_generation = drop_generation_;
      std::string rv_param = req.get_param_value("resourceVersion");
      int64_t rv = 0;
      if (rv_param.empty() || rv_param == "0") {
        for (const auto& [k, o] : objects_) {
          if (k.plural == plural && (ns.empty() || k.ns == ns) && Matches(o, w->selector)) {
            w->initial.push_back(Json{{"type", "ADDED"}, {"object", o}}.dump() + "\n");
          }
        }
        w->next_rv = rv_;
      } else if (!absl::SimpleAtoi(rv_param, &rv) || rv < compacted_rv_) {
        w->initial.push_back(
            Json{
                {"type", "ERROR"},
                {"object", StatusObject(absl::OutOfRangeError(absl::StrCat(
                               "too old resource version: ", rv_param, " (", compacted_rv_, ")")))}}
                .dump() +
            "\n");
        w->finish_after_initial = true;
      } else {
        w->next_rv = rv;
      }
      ++open_watches_;
    }
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [this, w](size_t, httplib::DataSink& sink) { return StreamWatch(*w, sink); },
        [this](bool) {
          std::lock_guard<std::mutex> lock(mu_);
          --open_watches_;
        });
    return;
  }

  absl::StatusOr<Json> result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Key k{plural, ns, name};
    Json deleted;
    if (method == "GET" && name.empty()) {
      std::vector<Requirement> sel = ParseSelector(req.get_param_value("labelSelector"));
      Json items = Json::array();
      for (const auto& [key, o] : objects_) {
        if (key.plural == plural && (ns.empty() || key.ns == ns) && Matches(o, sel)) {
          Json item = o;
          item.erase("apiVersion");  // as the real server does in lists
          item.erase("kind");
          items.push_back(item);
        }
      }
      result = Json{{"apiVersion", info->api_version},
                    {"kind", info->kind + "List"},
                    {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                    {"items", items}};
    } else if (method == "GET" && sub == "scale") {
      Json o = Stored(k);
      if (o.is_null()) {
        result = absl::NotFoundError(absl::StrCat(info->kind, " \"", name, "\" not found"));
      } else {
        result = Json{{"apiVersion", "autoscaling/v1"},
                      {"kind", "Scale"},
                      {"metadata",
                       {{"name", name},
                        {"namespace", ns},
                        {"resourceVersion", o["metadata"]["resourceVersion"]}}},
                      {"spec", {{"replicas", ValueAt(o, "/spec/replicas")}}},
                      {"status",
                       {{"replicas", ValueAt(o, "/status/replicas")},
                        {"selector", ValueAt(o, "/status/selector")}}}};
      }
    } else if (method == "GET") {
      Json o = Stored(k);
      result = o.is_null() ? absl::StatusOr<Json>(absl::NotFoundError(
                                 absl::StrCat(info->kind, " \"", name, "\" not found")))
                           : absl::StatusOr<Json>(o);
    } else if (method == "POST") {
      Json body = Json::parse(req.body, nullptr, false);
      result = body.is_discarded()
                   ? absl::StatusOr<Json>(absl::InvalidArgumentError("body is not JSON"))
                   : CreateLocked(plural, ns, body, manager);
    } else if (method == "PUT" && (sub.empty() || sub == "status")) {
      Json body = Json::parse(req.body, nullptr, false);
      result = body.is_discarded()
                   ? absl::StatusOr<Json>(absl::InvalidArgumentError("body is not JSON"))
                   : UpdateLocked(plural, ns, name, body, sub == "status", manager);
    } else if ((method == "PUT" || method == "PATCH") && sub == "scale") {
      Json body = Json::parse(req.body, nullptr, false);
      Json o = Stored(k);
      if (o.is_null()) {
        result = absl::NotFoundError("not found");
      } else if (body.is_discarded() || !body.contains("spec") ||
                 !body["spec"].contains("replicas")) {
        result = absl::InvalidArgumentError("scale: spec.replicas required");
      } else {
        o["spec"]["replicas"] = body["spec"]["replicas"];
        o["metadata"].erase("resourceVersion");
        result = UpdateLocked(plural, ns, name, o, false, manager);
      }
    } else if (method == "PATCH" &&
               req.get_header_value("Content-Type") == "application/apply-patch+yaml") {
      auto docs = ParseYamlDocuments(req.body, "apply patch");
      if (!docs.ok() || docs->size() != 1) {
        result = absl::InvalidArgumentError("apply patch must be one YAML document");
      } else {
        result = ApplyLocked(plural, ns, name, (*docs)[0], manager,
                             req.get_param_value("force") == "true");
      }
    } else if (method == "DELETE") {
      if (Stored(k).is_null()) {
        result = absl::NotFoundError(absl::StrCat(info->kind, " \"", name, "\" not found"));
      } else {
        Json body = Json::parse(req.body, nullptr, false);
        std::string policy = req.get_param_value("propagationPolicy");
        if (!body.is_discarded() && body.is_object())
          policy = body.value("propagationPolicy", policy);
        Json gone = Stored(k);
        deleted = gone;
        if (policy == "Orphan") {
          std::string uid = gone["metadata"].value("uid", "");
          for (auto& [ck, child] : objects_) {
            if (!child["metadata"].contains("ownerReferences")) continue;
            Json& refs = child["metadata"]["ownerReferences"];
            if (!refs.is_array()) continue;
            for (size_t r = refs.size(); r-- > 0;) {
              if (refs[r].value("uid", "") == uid) refs.erase(r);
            }
          }
          objects_.erase(k);
          owners_.erase(k);
          uids_.erase(uid);
          gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
          history_.push_back(Event{rv_, plural, ns, "DELETED", gone});
          cv_.notify_all();
        } else {
          RequestDelete(k);
        }
        result = Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}};
      }
    } else {
      result = absl::InvalidArgumentError(absl::StrCat("unsupported ", method, " ", req.path));
    }
    if (result.ok() && (method == "POST" || method == "PATCH" || method == "PUT")) {
      std::string written = (*result)["metadata"].value("name", name);
      CollectIfOrphan(Key{plural, ns, written});
    }
    if (result.ok() && method != "GET") {
      SimulateAfterWrite(plural, method == "DELETE" ? deleted : *result);
    }
  }
  reply(result);
}

bool FakeApiServer::StreamWatch(WatchState& w, httplib::DataSink& sink) {
  std::vector<std::string> lines;
  bool done = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!w.initial.empty()) {
      lines.swap(w.initial);
      done = w.finish_after_initial;
    } else {
      absl::Time wake = std::min(w.deadline, w.last_bookmark + options_.bookmark_interval);
      cv_.wait_for(lock,
                   absl::ToChronoMicroseconds(std::max(absl::ZeroDuration(), wake - absl::Now())),
                   [&] {
                     return stopping_ || drop_generation_ != w.drop_generation ||
                            (!history_.empty() && history_.back().rv > w.next_rv);
                   });
      if (stopping_ || drop_generation_ != w.drop_generation || absl::Now() >= w.deadline) {
        sink.done();
        return true;
      }
      if (w.next_rv < compacted_rv_) {
        lines.push_back(
            Json{{"type", "ERROR"},
                 {"object", StatusObject(absl::OutOfRangeError("too old resource version"))}}
                .dump() +
            "\n");
        done = true;
      } else {
        auto it = std::upper_bound(history_.begin(), history_.end(), w.next_rv,
                                   [](int64_t rv, const Event& e) { return rv < e.rv; });
        for (; it != history_.end(); ++it) {
          w.next_rv = it->rv;
          if (it->plural != w.plural || (!w.ns.empty() && it->ns != w.ns) ||
              !Matches(it->object, w.selector)) {
            continue;
          }
          lines.push_back(Json{{"type", it->type}, {"object", it->object}}.dump() + "\n");
        }
        if (w.bookmarks && absl::Now() - w.last_bookmark >= options_.bookmark_interval) {
          const ResourceInfo* info = Info(w.plural);
          w.next_rv = rv_;
          lines.push_back(Json{{"type", "BOOKMARK"},
                               {"object",
                                {{"kind", info ? info->kind : ""},
                                 {"apiVersion", info ? info->api_version : ""},
                                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}}}
                              .dump() +
                          "\n");
          w.last_bookmark = absl::Now();
        }
      }
    }
  }
  for (const std::string& line : lines) {
    if (!sink.write(line.data(), line.size())) return false;
  }
  if (done) sink.done();
  return true;
}

}  // namespace orca::controller::testing
