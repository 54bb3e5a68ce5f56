//! Shards, the pure part: which shard an object is in, a replica's fair share,
//! and what a replica does with the shard Leases it sees (`decide`). The
//! Leases themselves are `sharding`'s.
//!
//! With `run --shards N`, an object's shard is a stable hash (FNV-1a) of its
//! namespace mod N, so a schema and its tables (one namespace) share a shard;
//! the label `delta-operator.io/shard: "<i>"` (i < N) puts an object elsewhere.

use std::collections::{BTreeMap, BTreeSet};

/// The label that puts an object in a shard of its choosing.
pub const SHARD_LABEL: &str = "delta-operator.io/shard";

/// FNV-1a, 64 bits: stable across processes, builds and platforms (std's
/// hasher is randomized per process, so two replicas would disagree).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The shard of an object in `namespace`, with `label` its shard label if any,
/// out of `count` shards (0 counts as 1). A label that is not a shard index
/// below `count` is ignored.
pub fn shard_of(namespace: &str, label: Option<&str>, count: u32) -> u32 {
    let count = count.max(1);
    if let Some(i) = label.and_then(|l| l.trim().parse::<u32>().ok())
        && i < count
    {
        return i;
    }
    (fnv1a(namespace.as_bytes()) % u64::from(count)) as u32
}

/// The most shards one of `live` replicas holds: ceil(count / live).
pub fn fair_share(count: u32, live: usize) -> usize {
    let live = live.max(1);
    (count as usize).div_ceil(live)
}

/// How much `identity` wants `shard` (rendezvous hashing): the live replica
/// with the highest score takes a free shard first, so replicas do not race
/// for the same one.
pub fn score(identity: &str, shard: u32) -> u64 {
    let mut bytes = identity.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend_from_slice(&shard.to_le_bytes());
    fnv1a(&bytes)
}

/// One shard's Lease as last listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLease {
    /// Its holder; `None` when given back.
    pub holder: Option<String>,
    /// Not renewed within its duration.
    pub expired: bool,
}

/// What one replica sees in one listing of the Leases.
#[derive(Debug, Clone)]
pub struct Snapshot<'a> {
    /// This replica's identity.
    pub me: &'a str,
    /// Shards in all (`--shards`).
    pub count: u32,
    /// The shard Leases there are, by shard (an absent one is free).
    pub leases: BTreeMap<u32, ShardLease>,
    /// The identities of the replicas whose member Lease is unexpired (this
    /// replica counts whether listed or not).
    pub live: BTreeSet<String>,
}

/// What a replica does after one listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moves {
    /// Held, kept: renewed.
    pub renew: Vec<u32>,
    /// Held, more than the fair share: given back (one per listing, so a
    /// replica joining takes them over gradually rather than all at once).
    pub release: Vec<u32>,
    /// Free or expired: taken, up to the fair share.
    pub take: Vec<u32>,
}

impl Snapshot<'_> {
    fn holds(&self, shard: u32) -> bool {
        self.leases
            .get(&shard)
            .is_some_and(|l| !l.expired && l.holder.as_deref() == Some(self.me))
    }

    fn free(&self, shard: u32) -> bool {
        self.leases
            .get(&shard)
            .is_none_or(|l| l.expired || l.holder.as_deref().is_none_or(str::is_empty))
    }

    /// The live replica that scores highest for `shard`.
    fn first_choice(&self, shard: u32) -> &str {
        self.live
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(self.me))
            .max_by_key(|id| (score(id, shard), *id))
            .unwrap_or(self.me)
    }
}

/// Renew what is held; give one back past the fair share; take free ones up
/// to it, first those this replica is the rendezvous first choice for, then
/// by its score.
pub fn decide(s: &Snapshot<'_>) -> Moves {
    let live = s.live.len() + usize::from(!s.live.contains(s.me));
    let fair = fair_share(s.count, live);
    let mut held: Vec<u32> = (0..s.count).filter(|i| s.holds(*i)).collect();
    let mut moves = Moves::default();
    if held.len() > fair {
        // the one this replica wants least
        held.sort_by_key(|i| score(s.me, *i));
        moves.release.push(held.remove(0));
        held.sort_unstable();
    }
    let mut free: Vec<u32> = (0..s.count).filter(|i| s.free(*i)).collect();
    free.sort_by_key(|i| {
        (
            s.first_choice(*i) != s.me,
            std::cmp::Reverse(score(s.me, *i)),
        )
    });
    moves.take = free
        .into_iter()
        .take(fair.saturating_sub(held.len()))
        .collect();
    moves.take.sort_unstable();
    moves.renew = held;
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, expired: bool) -> ShardLease {
        ShardLease {
            holder: (!holder.is_empty()).then(|| holder.to_string()),
            expired,
        }
    }

    fn live(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // the reference values of FNV-1a 64
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn one_shard_holds_everything_and_a_label_moves_an_object() {
        assert_eq!(shard_of("sales", None, 1), 0);
        assert_eq!(shard_of("sales", Some("3"), 1), 0);
        assert_eq!(shard_of("sales", Some("3"), 4), 3);
        let by_hash = shard_of("sales", None, 4);
        assert_eq!(shard_of("sales", Some("4"), 4), by_hash, "out of range");
        assert_eq!(shard_of("sales", Some("x"), 4), by_hash, "not a number");
        assert_eq!(shard_of("sales", None, 0), 0);
    }

    #[test]
    fn namespaces_spread_over_the_shards() {
        let mut seen = [0usize; 4];
        for i in 0..400 {
            seen[shard_of(&format!("team-{i}"), None, 4) as usize] += 1;
        }
        assert!(seen.iter().all(|n| (60..=140).contains(n)), "{seen:?}");
    }

    #[test]
    fn fair_share_rounds_up() {
        assert_eq!(fair_share(4, 2), 2);
        assert_eq!(fair_share(4, 3), 2);
        assert_eq!(fair_share(4, 0), 4);
        assert_eq!(fair_share(5, 2), 3);
        assert_eq!(fair_share(1, 5), 1);
    }

    #[test]
    fn alone_a_replica_takes_every_shard() {
        let s = Snapshot {
            me: "a",
            count: 4,
            leases: BTreeMap::new(),
            live: live(&[]),
        };
        assert_eq!(
            decide(&s),
            Moves {
                take: vec![0, 1, 2, 3],
                ..Moves::default()
            }
        );
    }

    #[test]
    fn a_replica_past_its_share_gives_one_back_and_the_newcomer_takes_free_ones() {
        let all_a: BTreeMap<u32, ShardLease> = (0..4).map(|i| (i, lease("a", false))).collect();
        let a = Snapshot {
            me: "a",
            count: 4,
            leases: all_a.clone(),
            live: live(&["a", "b"]),
        };
        let m = decide(&a);
        assert_eq!(m.release.len(), 1);
        assert_eq!(m.renew.len(), 3);
        assert!(m.take.is_empty());
        // b sees the one given back and takes it, not those a holds
        let mut leases = all_a;
        leases.insert(m.release[0], lease("", false));
        let b = Snapshot {
            me: "b",
            count: 4,
            leases,
            live: live(&["a", "b"]),
        };
        assert_eq!(
            decide(&b),
            Moves {
                take: m.release.clone(),
                ..Moves::default()
            }
        );
    }

    #[test]
    fn a_dead_replicas_expired_shards_are_taken() {
        let leases = BTreeMap::from([
            (0, lease("a", true)),
            (1, lease("b", false)),
            (2, lease("a", true)),
            (3, lease("b", false)),
        ]);
        let b = Snapshot {
            me: "b",
            count: 4,
            leases,
            live: live(&["b"]),
        };
        assert_eq!(
            decide(&b),
            Moves {
                renew: vec![1, 3],
                take: vec![0, 2],
                ..Moves::default()
            }
        );
    }

    #[test]
    fn an_expired_lease_of_this_replica_is_taken_again_not_renewed() {
        let b = Snapshot {
            me: "b",
            count: 2,
            leases: BTreeMap::from([(0, lease("b", true)), (1, lease("a", false))]),
            live: live(&["a", "b"]),
        };
        assert_eq!(
            decide(&b),
            Moves {
                take: vec![0],
                ..Moves::default()
            }
        );
    }

    #[test]
    fn two_replicas_starting_together_prefer_different_shards() {
        let snap = |me| Snapshot {
            me,
            count: 8,
            leases: BTreeMap::new(),
            live: live(&["op-a", "op-b"]),
        };
        let a = decide(&snap("op-a")).take;
        let b = decide(&snap("op-b")).take;
        assert_eq!(a.len(), 4);
        assert_eq!(b.len(), 4);
        // each takes first the shards it is the rendezvous first choice for
        for (me, took) in [("op-a", &a), ("op-b", &b)] {
            let first: Vec<u32> = (0..8).filter(|i| snap(me).first_choice(*i) == me).collect();
            let wanted = first.iter().filter(|i| took.contains(i)).count();
            assert_eq!(wanted, first.len().min(4), "{me}: {first:?} {took:?}");
        }
    }

    #[test]
    fn shards_held_by_a_live_replica_are_left_alone() {
        let s = Snapshot {
            me: "c",
            count: 2,
            leases: BTreeMap::from([(0, lease("a", false)), (1, lease("b", false))]),
            live: live(&["a", "b", "c"]),
        };
        assert_eq!(decide(&s), Moves::default());
    }
}
