#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <utility>

namespace rlockctl {

/// Runs a command's coroutine on its own io_context and returns its exit code; an exception it
/// throws is rethrown here (main turns it into a message and exit code 2).
template <typename Fn>
int run_coroutine(Fn fn) {
  boost::asio::io_context io;
  int rc = 2;
  std::exception_ptr failure;
  boost::asio::co_spawn(io, fn(io.get_executor()), [&](std::exception_ptr e, int r) {
    failure = e;
    rc = r;
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return rc;
}

}  // namespace rlockctl
