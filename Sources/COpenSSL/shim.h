// OpenSSL libcrypto (SHA-256 via EVP) and libssl (TLS). Macros Swift cannot import are wrapped in
// static inline functions here.
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "dcserve needs OpenSSL >= 3.0 (apt-get install libssl-dev)"
#endif

static inline long dcserve_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long dcserve_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long dcserve_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

// TLS server support (HTTPCore's TLSContext / TLSServerTransport).
static inline long dcserve_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long dcserve_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) {
    return SSL_CTX_sess_set_cache_size(ctx, size);
}
static inline long dcserve_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    return SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}
static inline long dcserve_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg) {
    return SSL_CTX_set_tlsext_servername_arg(ctx, arg);
}
static inline long dcserve_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline long dcserve_SSL_CTX_set_read_ahead(SSL_CTX *ctx, long yes) {
    return SSL_CTX_set_read_ahead(ctx, yes);
}
// Remembers, in the byte `BIO_get_callback_arg` points to, whether the socket BIO's latest read
// left the socket drained (it returned fewer bytes than asked, or nothing). TLSServerTransport uses it to
// wait for the next readiness edge instead of issuing a read that can only fail with EAGAIN.
static long dcserve_bio_read_observer(BIO *b, int oper, const char *argp, size_t len, int argi, long argl,
                                      int ret, size_t *processed) {
    (void)argp; (void)argi; (void)argl;
    if (oper == (BIO_CB_READ | BIO_CB_RETURN)) {
        unsigned char *drained = (unsigned char *)BIO_get_callback_arg(b);
        if (drained) *drained = (ret <= 0 || processed == NULL || *processed < len) ? 1 : 0;
    }
    return ret;
}
/// Installs `dcserve_bio_read_observer` on `ssl`'s read BIO, reporting into `*flag` (which must outlive `ssl`).
static inline void dcserve_SSL_observe_socket_reads(SSL *ssl, unsigned char *flag) {
    BIO *rbio = SSL_get_rbio(ssl);
    if (rbio == NULL) return;
    BIO_set_callback_arg(rbio, (char *)flag);
    BIO_set_callback_ex(rbio, dcserve_bio_read_observer);
}
static inline long dcserve_SSL_session_reused(const SSL *ssl) {
    return SSL_session_reused(ssl);
}
static inline int dcserve_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
static inline int dcserve_SSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }
static inline int dcserve_SSL_TLSEXT_ERR_ALERT_FATAL(void) { return SSL_TLSEXT_ERR_ALERT_FATAL; }
static inline uint64_t dcserve_SSL_OP_server_defaults(void) {
    // No renegotiation (a client cannot make a write wait for a read), no compression (CRIME).
    return SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
}
static inline uint64_t dcserve_SSL_OP_client_defaults(void) {
    // No renegotiation, no compression; a peer that closes without close_notify reads as end of
    // stream (HTTP framing, not TLS, decides whether a response was complete).
    return SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1
         | SSL_OP_IGNORE_UNEXPECTED_EOF;
}
