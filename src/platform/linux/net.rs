//! Who owns a TCP socket listening on this machine: `/proc/net/tcp` and
//! `/proc/net/tcp6` name the uid of every socket (issue 42 item 8: any
//! local user who binds a well-known model port first would otherwise
//! become the model of everyone who configured none).
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::platform::net::Owner;

/// `/proc/net/tcp`'s state of a listening socket.
const LISTEN: &str = "0A";

/// The owner of what listens on loopback `port`: this user or root is
/// [`Owner::Trusted`]; another user is [`Owner::Other`]; nothing found (or
/// no `/proc`) is [`Owner::Unknown`].
pub fn listener_owner(port: u16) -> Owner {
    let mut owners = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            owners.extend(owners_in(&text, port));
        }
    }
    // SAFETY: geteuid takes no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    judge(&owners, me)
}

/// Any listener of another user than `me` or root makes the port
/// untrusted: a connection to 127.0.0.1 may reach it.
fn judge(owners: &[u32], me: u32) -> Owner {
    match owners.iter().find(|&&uid| uid != me && uid != 0) {
        Some(&uid) => Owner::Other(uid),
        None if owners.is_empty() => Owner::Unknown,
        None => Owner::Trusted,
    }
}

/// The uids of the sockets of one `/proc/net/tcp{,6}` table that listen on
/// `port` at an address a connection to loopback reaches (loopback or
/// any).
fn owners_in(text: &str, port: u16) -> Vec<u32> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state, uid) = (fields.get(1)?, fields.get(3)?, fields.get(7)?);
            if *state != LISTEN {
                return None;
            }
            let (addr, p) = local.split_once(':')?;
            if u16::from_str_radix(p, 16).ok()? != port || !reaches_loopback(&address(addr)?) {
                return None;
            }
            uid.parse().ok()
        })
        .collect()
}

/// An address as the kernel prints it: 32-bit words in the machine's byte
/// order, in hex.
fn address(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        Some(
            u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16)
                .ok()?
                .to_ne_bytes(),
        )
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

fn reaches_loopback(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.is_loopback() || a.is_unspecified(),
        IpAddr::V6(a) => {
            a.is_loopback()
                || a.is_unspecified()
                || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/proc/net/tcp` sample (as a little-endian machine prints it):
    /// 11434 on 127.0.0.1 by uid 1001, 8080 on 0.0.0.0 by root, 1234 on
    /// 10.0.0.5 only (not loopback) by uid 1002, 8000 connected (not
    /// listening) by uid 1003.
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2CAA 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 1 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0500000A:04D2 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 3 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1003        0 4 1 0000000000000000 20 4 30 10 -1
";
    /// `/proc/net/tcp6`: 1234 on ::1 by uid 1000, 8000 on :: by 1004.
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:04D2 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1004        0 6 1 0000000000000000 100 0 0 10 0
";

    #[cfg(target_endian = "little")] // the samples are a little-endian machine's
    #[test]
    fn the_owner_of_a_listening_port_is_read_from_proc_net_tcp() {
        assert_eq!(owners_in(TCP, 11434), [1001]);
        assert_eq!(owners_in(TCP, 8080), [0]);
        assert!(owners_in(TCP, 1234).is_empty(), "not on loopback");
        assert!(owners_in(TCP, 8000).is_empty(), "not listening");
        assert_eq!(owners_in(TCP6, 1234), [1000]);
        assert_eq!(owners_in(TCP6, 8000), [1004]);
        // The user is 1000: root's and the user's own are trusted.
        assert_eq!(judge(&owners_in(TCP, 11434), 1000), Owner::Other(1001));
        assert_eq!(judge(&owners_in(TCP, 8080), 1000), Owner::Trusted);
        assert_eq!(judge(&owners_in(TCP6, 1234), 1000), Owner::Trusted);
        assert_eq!(judge(&[1000, 1004], 1000), Owner::Other(1004));
        assert_eq!(judge(&[], 1000), Owner::Unknown);
        assert_eq!(
            owners_in("garbage\n0: zz:zz 0 0A 0 0 0 x\n", 11434),
            Vec::<u32>::new()
        );
    }

    /// A port this process listens on is its own.
    #[test]
    fn our_own_listener_is_trusted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(listener_owner(port), Owner::Trusted);
    }
}
