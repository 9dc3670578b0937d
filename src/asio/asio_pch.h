// Internal: the Asio and Beast headers idem's Asio users include, precompiled once for all of
// them when IDEM_PCH is on (idem_use_asio_pch, cmake/IdemHelpers.cmake); never included by a
// source file. GCC 12 reports a false "potential null pointer dereference" inside Asio at -O2
// (gateway/asio_includes.h), silenced here as there.
#ifndef IDEM_ASIO_ASIO_PCH_H_
#define IDEM_ASIO_ASIO_PCH_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#pragma GCC diagnostic pop

#endif  // IDEM_ASIO_ASIO_PCH_H_
