//! TLS material generated at start: a CA (rcgen), a server certificate for
//! `127.0.0.1` and `localhost` signed by it, served with tokio-rustls (TLS 1.2
//! and 1.3, ALPN `http/1.1` only), and a client certificate signed by the same
//! CA: a client that presents it is authenticated, as with a kubeconfig's
//! `client-certificate-data` on a real cluster.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

use super::error::SimError;

/// The generated CA and, when TLS is on, the acceptor using a certificate it signed.
pub(crate) struct TlsMaterial {
    pub ca_pem: String,
    pub acceptor: Option<TlsAcceptor>,
    /// A client certificate and its key (PEM), when serving TLS.
    pub client: Option<(String, String)>,
}

fn tls_err(e: impl std::fmt::Display) -> SimError {
    SimError::Tls(e.to_string())
}

/// Generates a CA; with `serve`, also a server certificate and a rustls acceptor.
pub(crate) fn generate(serve: bool) -> Result<TlsMaterial, SimError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "krply-sim-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    let ca_key = KeyPair::generate().map_err(tls_err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(tls_err)?;
    let ca_pem = ca_cert.pem();
    if !serve {
        return Ok(TlsMaterial {
            ca_pem,
            acceptor: None,
            client: None,
        });
    }
    let issuer = Issuer::new(ca_params, ca_key);
    let client = client_certificate(&issuer)?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(tls_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "krply-sim");
    params.use_authority_key_identifier_extension = true;
    params.key_usages.push(KeyUsagePurpose::DigitalSignature);
    params
        .extended_key_usages
        .push(ExtendedKeyUsagePurpose::ServerAuth);
    let key = KeyPair::generate().map_err(tls_err)?;
    let cert = params.signed_by(&key, &issuer).map_err(tls_err)?;
    let chain = vec![
        CertificateDer::from(cert.der().to_vec()),
        CertificateDer::from(ca_cert.der().to_vec()),
    ];
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Client certificates are verified against the CA when offered; clients
    // without one still connect and authenticate with a token.
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca_cert.der().to_vec()))
        .map_err(tls_err)?;
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(tls_err)?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(tls_err)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, private)
        .map_err(tls_err)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem,
        acceptor: Some(TlsAcceptor::from(Arc::new(config))),
        client: Some(client),
    })
}

/// A client certificate for `krply-sim-admin` (group `system:masters`).
fn client_certificate(issuer: &Issuer<'_, KeyPair>) -> Result<(String, String), SimError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "krply-sim-admin");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    params.use_authority_key_identifier_extension = true;
    params.key_usages.push(KeyUsagePurpose::DigitalSignature);
    params
        .extended_key_usages
        .push(ExtendedKeyUsagePurpose::ClientAuth);
    let key = KeyPair::generate().map_err(tls_err)?;
    let cert = params.signed_by(&key, issuer).map_err(tls_err)?;
    Ok((cert.pem(), key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_a_ca_and_an_acceptor() {
        let m = generate(true).unwrap();
        assert!(m.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(m.acceptor.is_some());
        let (cert, key) = m.client.unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(key.contains("PRIVATE KEY"));
        assert!(generate(false).unwrap().acceptor.is_none());
    }
}
