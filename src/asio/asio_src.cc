// Asio's, Asio's TLS and Beast's compiled parts, once for every idem target (CMakeLists.txt).
// GCC 12 reports a false "potential null pointer dereference" inside Asio at -O2
// (gateway/asio_includes.h), which -Werror would turn into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
#pragma GCC diagnostic pop
