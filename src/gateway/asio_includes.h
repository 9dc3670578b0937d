// Internal: the Asio and Beast headers the gateway's server side uses, in one place, with the
// warning GCC 12 reports falsely inside Asio at -O2 ("potential null pointer dereference")
// silenced, as -Werror would turn it into a failed release build.
#ifndef IDEM_GATEWAY_ASIO_INCLUDES_H_
#define IDEM_GATEWAY_ASIO_INCLUDES_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// The completion token of every awaited operation whose error the caller handles itself: the
// error comes back in a tuple instead of as an exception.
inline constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_ASIO_INCLUDES_H_
