#include "http/test_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#pragma GCC diagnostic pop
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "http/stream.h"

namespace idem::http::testing {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

}  // namespace

struct ScriptedServer::Conn {
  Conn(ScriptedServer* s, asio::any_io_executor ex, asio::ssl::context* tls)
      : server(s),
        stream(tls ? std::make_unique<Stream>(ex, *tls) : std::make_unique<Stream>(ex)) {}
  ~Conn() {
    if (id > 0) server->Closed();
  }
  ScriptedServer* server;
  std::unique_ptr<Stream> stream;
  boost::beast::flat_buffer buffer;
  bhttp::request<bhttp::string_body> req;
  std::string out;
  int id = 0;
  int index = 0;
};

TestCertificate MakeTestCertificate(const std::string& san) {
  TestCertificate c;
  char tmpl[] = "/tmp/idem-http-cert-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) ADD_FAILURE() << "mkdtemp failed";
  c.dir = dir ? dir : "/tmp";
  c.ca_file = c.dir + "/ca.pem";
  c.cert_file = c.dir + "/cert.pem";
  c.key_file = c.dir + "/key.pem";
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::vector<std::string> steps = {
      fmt::format("openssl req -x509 {} -days 1 -subj /CN=idem-test-ca -keyout {}/ca.key -out {}",
                  key, c.dir, c.ca_file),
      fmt::format("openssl req {} -subj /CN=idem-test -keyout {} -out {}/server.csr", key,
                  c.key_file, c.dir),
      fmt::format("openssl x509 -req -in {0}/server.csr -CA {1} -CAkey {0}/ca.key "
                  "-CAcreateserial -days 1 -extfile {0}/ext.cnf -out {2}",
                  c.dir, c.ca_file, c.cert_file),
  };
  std::ofstream(c.dir + "/ext.cnf") << "subjectAltName=" << san << "\n";
  for (const std::string& step : steps) {
    const std::string cmd = step + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not run: " << cmd;
  }
  return c;
}

std::string Ok(const std::string& body) {
  return fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}", body.size(), body);
}

ScriptedServer::ScriptedServer(Script script, const TestCertificate* cert)
    : script_(std::move(script)),
      acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  if (cert != nullptr) {
    tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    tls_->use_certificate_chain_file(cert->cert_file);
    tls_->use_private_key_file(cert->key_file, asio::ssl::context::pem);
  }
  port_ = acceptor_.local_endpoint().port();
  Accept();
  thread_ = std::thread([this] { ioc_.run(); });
}

ScriptedServer::~ScriptedServer() {
  ioc_.stop();
  thread_.join();
  held_.clear();
}

std::string ScriptedServer::Url(const std::string& path, const std::string& host) const {
  return fmt::format("{}://{}:{}{}", tls_ ? "https" : "http", host, port_, path);
}

std::vector<SeenRequest> ScriptedServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int ScriptedServer::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepted_;
}

int ScriptedServer::max_concurrent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_open_;
}

void ScriptedServer::WaitClosed(int n) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return closed_ >= n; });
}

void ScriptedServer::Closed() {
  std::lock_guard<std::mutex> lock(mu_);
  --open_;
  ++closed_;
  cv_.notify_all();
}

void ScriptedServer::Accept() {
  auto c = std::make_shared<Conn>(this, ioc_.get_executor(), tls_.get());
  acceptor_.async_accept(c->stream->tcp().socket(), [this, c](error_code ec) {
    if (ec) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      c->id = ++accepted_;
      ++open_;  // balanced by ~Conn
      max_open_ = std::max(max_open_, open_);
    }
    Begin(c);
    Accept();
  });
}

void ScriptedServer::Begin(std::shared_ptr<Conn> c) {
  if (c->stream->tls() == nullptr) return ReadNext(c);
  c->stream->tls()->async_handshake(asio::ssl::stream_base::server, [this, c](error_code ec) {
    if (!ec) ReadNext(c);
  });
}

void ScriptedServer::ReadNext(std::shared_ptr<Conn> c) {
  c->req = {};
  bhttp::async_read(*c->stream, c->buffer, c->req, [this, c](error_code ec, std::size_t) {
    if (ec) return;
    SeenRequest seen{std::string(c->req.method_string()),
                     std::string(c->req.target()),
                     "",
                     c->req.body(),
                     c->id,
                     ++c->index};
    if (auto it = c->req.find("Idempotency-Key"); it != c->req.end()) {
      seen.idempotency_key = std::string(it->value());
    }
    for (const auto& field : c->req) {
      seen.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(seen);
    }
    ScriptedReply reply = script_(seen);
    if (reply.hang) {
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(c);
    }
    c->out = std::move(reply.bytes);
    asio::async_write(*c->stream, asio::buffer(c->out),
                      [this, c, reply](error_code wec, std::size_t) {
                        if (wec || reply.hang) return;
                        if (reply.close) return c->stream->Close();
                        ReadNext(c);
                      });
  });
}

}  // namespace idem::http::testing
