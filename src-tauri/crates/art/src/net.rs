//! One TLS set-up for the whole process. Building a TLS connector reads and parses the
//! system's trust store (some 30 ms here, for ~150 certificates), and reqwest does it for
//! every client it builds: the command line built two before its first request, the app
//! one per adapter, doctor and model list. Every HTTP client of the framework is built
//! from [`client_builder`] instead, which hands reqwest the one connector made on first
//! use (with the protocols reqwest itself would offer: HTTP/2, then HTTP/1.1); [`warm`]
//! makes it on another thread ahead of the first request.

use std::sync::OnceLock;

/// The process's TLS connector, made on first use; `None` when the platform's TLS
/// library refused (each client then tries its own, and reports the failure).
fn connector() -> Option<&'static native_tls::TlsConnector> {
    static CONNECTOR: OnceLock<Option<native_tls::TlsConnector>> = OnceLock::new();
    CONNECTOR
        .get_or_init(|| {
            let mut tls = native_tls::TlsConnector::builder();
            tls.request_alpns(&["h2", "http/1.1"]);
            tls.build()
                .inspect_err(|e| tracing::warn!("TLS could not be set up once: {e}"))
                .ok()
        })
        .as_ref()
}

/// A reqwest client builder on the process's TLS connector.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match connector() {
        Some(tls) => builder.use_preconfigured_tls(tls.clone()),
        None => builder,
    }
}

/// Make the TLS connector on a thread of its own, so that the first client built does
/// not wait for the trust store (a process calls it as it starts).
pub fn warm() {
    let _ = std::thread::Builder::new()
        .name("tls-warm-up".into())
        .spawn(|| {
            connector();
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_share_one_connector_and_build() {
        let first = connector().expect("this machine's TLS library sets up");
        assert!(std::ptr::eq(first, connector().unwrap()), "made once");
        client_builder().build().unwrap();
    }
}
