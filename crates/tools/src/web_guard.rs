//! Which addresses `web_fetch` may reach. A model must not probe the person's network:
//! loopback, private, link-local (cloud metadata at 169.254.169.254), shared (CGNAT),
//! unique-local and other non-global addresses are refused unless config allows them.
//!
//! The check runs where the connection is made, not on the URL's text: names go through
//! [`GuardedResolver`], which drops refused addresses after DNS resolution (so a name that
//! resolves to 127.0.0.1, or re-resolves to it later, is still refused), and IP literals,
//! which skip DNS, are checked with [`check_host`] before the request and at every redirect.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why `ip` is not a public address, or `None` when it is one.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            // ::ffff:127.0.0.1 reaches 127.0.0.1.
            Some(v4) => non_public_v4(v4),
            None => non_public_v6(v6),
        },
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("a broadcast, multicast or reserved address")
    } else if ip.is_documentation() || (a == 198 && (b == 18 || b == 19)) {
        Some("a documentation or benchmarking address")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a unique-local (private) address")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if first == 0x2001 && ip.segments()[1] == 0x0db8 {
        Some("a documentation address")
    } else if first == 0x0064 && ip.segments()[1] == 0xff9b {
        // NAT64 embeds an IPv4 address in the last 32 bits.
        let [.., c, d] = ip.segments();
        non_public_v4(Ipv4Addr::from(((c as u32) << 16) | d as u32))
    } else {
        None
    }
}

/// Checks a URL's host when it is an IP literal (names are checked after resolution).
/// `Err` says why the address is refused.
pub fn check_host(host: &url::Host<&str>, allow_private: bool) -> Result<(), String> {
    if allow_private {
        return Ok(());
    }
    let ip = match host {
        url::Host::Ipv4(v4) => IpAddr::V4(*v4),
        url::Host::Ipv6(v6) => IpAddr::V6(*v6),
        url::Host::Domain(_) => return Ok(()),
    };
    match non_public(ip) {
        Some(why) => Err(format!("{ip} is {why}")),
        None => Ok(()),
    }
}

/// A DNS resolver that keeps only public addresses (all of them with `allow_private`).
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (kept, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = found
                .into_iter()
                .partition(|a| allow_private || non_public(a.ip()).is_none());
            if kept.is_empty() {
                let why = refused
                    .first()
                    .and_then(|a| non_public(a.ip()).map(|why| format!("{} is {why}", a.ip())))
                    .unwrap_or_else(|| "no address".to_owned());
                return Err(Box::new(Refused(format!(
                    "{host} resolves only to addresses web_fetch may not reach ({why}); \
                     set web_fetch.allow_private_addresses = true to allow them"
                )))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// A refused address, told apart from other connection errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(non_public(ip).is_some(), "{ip} passed");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(non_public(ip), None, "{ip} refused");
        }
    }

    #[test]
    fn ip_literals_are_checked_and_names_left_to_the_resolver() {
        let host = |s: &str| url::Url::parse(s).unwrap();
        let loopback = host("http://127.0.0.1:8080/");
        let err = check_host(&loopback.host().unwrap(), false).unwrap_err();
        assert!(err.contains("loopback"), "{err}");
        assert!(check_host(&loopback.host().unwrap(), true).is_ok());
        let v6 = host("http://[::1]/");
        assert!(check_host(&v6.host().unwrap(), false).is_err());
        let name = host("https://example.com/");
        assert!(check_host(&name.host().unwrap(), false).is_ok());
    }
}
