//! The host-key lines of `hetpilot platforms check`: for a profile's SSH login host (and
//! each host of the ssh adapter), whether known_hosts lists the key it presents, does not
//! know it yet (with its fingerprint and the command that adds it), or lists another key.

use super::check_output::println;
use hetpilot::provision::runner::look_up_host_key;
use hetpilot::provision::{AdapterKind, Login, PlatformProfile};
use hetpilot_transport::host_keys::{HostKeyPolicy, Listing};

/// Prints one line per host the profile reaches over SSH; returns how many were refused.
/// Changes no file: under accept-new an unknown key is only reported.
pub fn report(profile: &PlatformProfile) -> usize {
    let Login::Ssh {
        host,
        port,
        host_keys,
        ..
    } = &profile.login
    else {
        return 0;
    };
    let mut hosts = vec![host.as_str()];
    if profile.adapter == AdapterKind::Ssh {
        hosts.extend(
            profile
                .hosts
                .iter()
                .map(String::as_str)
                .filter(|h| *h != host),
        );
    }
    let file = host_keys.known_hosts.display();
    let mut refused = 0;
    for host in hosts {
        let place = format!("{host}:{port}");
        let (listing, key) = match look_up_host_key(host, *port, host_keys) {
            Ok(found) => found,
            Err(e) => {
                println!("  FAIL host key of {place}: {e}");
                refused += 1;
                continue;
            }
        };
        let unknown = matches!(listing, Listing::NoFile | Listing::NotListed);
        match host_keys.refusal(host, *port, listing, &key) {
            None => println!("  ok   host key of {place}: {key} (listed in {file})"),
            Some(_) if unknown && host_keys.policy == HostKeyPolicy::AcceptNew => println!(
                "  warn host key of {place}: unknown, {key}; host_key_policy = \"accept-new\" \
                 adds it to {file} at the first connection"
            ),
            Some(refusal) => {
                println!("  FAIL host key: {refusal}");
                refused += 1;
            }
        }
    }
    refused
}
