//! Time-ordered UUIDv7 values for [`TestId`](super::TestId) and [`RunId`](super::RunId),
//! without a system call each.
//!
//! `uuid::Uuid::now_v7` asks the kernel for random bytes twice per new millisecond (its
//! counter's seed and the id's random bits): two `getrandom` calls a test, as each test starts
//! in a millisecond of its own. These ids must be unique and ordered, not secret, so their
//! random bits come from one generator for the whole process, seeded once by the standard
//! library's random keys (the `getrandom` every thread with a `HashMap` already makes).

use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use super::wyrand;

/// The 74 random bits of a UUIDv7: 12 in `rand_a`, 62 in `rand_b`.
const RANDOM_BITS: u32 = 74;

/// The process's generator: the last id handed out, and a wyrand state for the next.
struct Generator {
    last: u128,
    state: u64,
}

impl Generator {
    fn seeded() -> Self {
        Generator {
            last: 0,
            state: RandomState::new().hash_one(std::process::id()),
        }
    }

    /// A new id later than every one before it: `millis` with fresh random bits, or, when
    /// that does not sort after the last (the same millisecond, or a clock set back), the
    /// last one's successor.
    fn next(&mut self, millis: u64) -> u128 {
        let random = (u128::from(wyrand(&mut self.state)) << 64 | u128::from(wyrand(&mut self.state)))
            & ((1 << RANDOM_BITS) - 1);
        let candidate = assemble(millis, random);
        self.last = if candidate > self.last {
            candidate
        } else {
            successor(self.last)
        };
        self.last
    }
}

/// A UUIDv7 of `millis` (its low 48 bits) and `random` (its low 74 bits).
fn assemble(millis: u64, random: u128) -> u128 {
    let millis = u128::from(millis) & ((1 << 48) - 1);
    let rand_a = (random >> 62) & 0xfff;
    let rand_b = random & ((1 << 62) - 1);
    millis << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
}

/// The millisecond and the random bits of a UUIDv7 made by [`assemble`].
fn parts(id: u128) -> (u64, u128) {
    let millis = (id >> 80) as u64;
    let random = ((id >> 64) & 0xfff) << 62 | id & ((1 << 62) - 1);
    (millis, random)
}

/// The next UUIDv7 after `id`: its random bits plus one, carried into the millisecond when
/// they are all ones.
fn successor(id: u128) -> u128 {
    let (millis, random) = parts(id);
    if random == (1 << RANDOM_BITS) - 1 {
        assemble(millis.wrapping_add(1), 0)
    } else {
        assemble(millis, random + 1)
    }
}

/// A new UUIDv7, later than every one this process made before it.
pub(super) fn generate() -> u128 {
    static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);
    // A clock before 1970 reads as 1970: the order still holds, through `successor`.
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    // The generator's state is whole after every step, so a poisoned lock is no harm.
    let mut generator = GENERATOR.lock().unwrap_or_else(PoisonError::into_inner);
    generator.get_or_insert_with(Generator::seeded).next(millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_version_7_of_the_rfc_variant_and_carry_the_time() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        let id = uuid::Uuid::from_u128(generate());
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        assert_eq!(id.get_version(), Some(uuid::Version::SortRand));
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        let (seconds, nanos) = id.get_timestamp().unwrap().to_unix();
        let millis = seconds * 1000 + u64::from(nanos) / 1_000_000;
        assert!(
            (before..=after).contains(&millis),
            "{before} <= {millis} <= {after}"
        );
    }

    #[test]
    fn the_random_bits_round_trip_and_the_successor_carries_into_the_millisecond() {
        let all_ones = (1 << RANDOM_BITS) - 1;
        for random in [0, 1, 0xfff << 62, (1 << 62) - 1, all_ones - 1, all_ones] {
            assert_eq!(
                parts(assemble(1_732_243_200_000, random)),
                (1_732_243_200_000, random)
            );
        }
        let last = assemble(41, all_ones);
        assert_eq!(parts(successor(last)), (42, 0));
        assert!(successor(last) > last);
        let id = assemble(41, (1 << 62) - 1);
        assert_eq!(parts(successor(id)), (41, 1 << 62), "rand_b carries into rand_a");
        assert!(successor(id) > id);
    }

    #[test]
    fn ids_of_one_millisecond_or_a_clock_set_back_still_sort_after_the_last() {
        let mut generator = Generator { last: 0, state: 7 };
        let mut ids = vec![generator.next(1_000)];
        ids.extend((0..1_000).map(|_| generator.next(1_000)));
        // The clock goes back a second: ids keep to the last millisecond, in order.
        ids.extend((0..1_000).map(|_| generator.next(0)));
        ids.push(generator.next(2_000));
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(
            ids.iter()
                .all(|&id| uuid::Uuid::from_u128(id).get_version_num() == 7)
        );
        assert_eq!(parts(ids[2_000]).0, 1_000);
        assert_eq!(parts(ids[2_001]).0, 2_000);
    }

    #[test]
    fn threads_get_distinct_ids_each_in_order() {
        let per_thread: Vec<Vec<u128>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..5_000).map(|_| generate()).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ids in &per_thread {
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
        }
        let all: HashSet<u128> = per_thread.iter().flatten().copied().collect();
        assert_eq!(all.len(), 20_000);
    }
}
