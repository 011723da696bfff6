#pragma once

// Prometheus' text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): names, escaping and the writer
// every exposition (the client's, the quorum lock's) renders with.
#include "rlock/error.hpp"
#include "rlock/metrics.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlock::detail {

inline bool valid_metric_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

inline bool valid_label_name(std::string_view s) {
  // Names starting with "__" are reserved for Prometheus' own use.
  return valid_metric_name(s) && s.find(':') == std::string_view::npos && !s.starts_with("__");
}

/// A label value with \, " and newline escaped.
inline std::string escaped(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

class prometheus_writer {
 public:
  prometheus_writer(std::string_view prefix, const metric_labels& labels) : prefix_(prefix) {
    for (const auto& [name, value] : labels) {
      if (!valid_label_name(name) || name == "le" || name == "wake") {
        throw_error(errc::invalid_argument,
                    fmt::format("'{}' is not a label name this exposition can use", name));
      }
      common_ += fmt::format("{}{}=\"{}\"", common_.empty() ? "" : ",", name, escaped(value));
    }
  }

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ +=
        fmt::format("# HELP {}_{} {}\n# TYPE {}_{} {}\n", prefix_, name, help, prefix_, name, type);
  }
  /// One sample; `extra` is a label list without braces ("" for none).
  template <typename T>
  void sample(std::string_view name, const std::string& extra, T value) {
    std::string labels = common_;
    if (!extra.empty()) labels += (labels.empty() ? "" : ",") + extra;
    out_ += fmt::format("{}_{}{}{}{} {}\n", prefix_, name, labels.empty() ? "" : "{", labels,
                        labels.empty() ? "" : "}", value);
  }
  void counter(std::string_view name, std::string_view help, std::uint64_t v) {
    const std::string full = fmt::format("{}_total", name);
    family(full, "counter", help);
    sample(full, "", v);
  }
  void gauge(std::string_view name, std::string_view help, std::uint64_t v) {
    family(name, "gauge", help);
    sample(name, "", v);
  }
  void histogram_family(std::string_view name, std::string_view help, const histogram& h) {
    family(name, "histogram", help);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.upper_bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      sample(fmt::format("{}_bucket", name), fmt::format("le=\"{}\"", h.upper_bounds[i]),
             cumulative);
    }
    sample(fmt::format("{}_bucket", name), "le=\"+Inf\"", h.count);
    sample(fmt::format("{}_sum", name), "", h.sum);
    sample(fmt::format("{}_count", name), "", h.count);
  }

  std::string take() { return std::move(out_); }

 private:
  std::string_view prefix_;
  std::string common_;
  std::string out_;
};

/// Throws errc::invalid_argument unless `prefix` is a metric name prefix Prometheus accepts.
inline void check_metric_prefix(std::string_view prefix) {
  if (!valid_metric_name(prefix)) {
    throw_error(errc::invalid_argument,
                fmt::format("'{}' is not a metric name prefix Prometheus accepts", prefix));
  }
}

}  // namespace rlock::detail
