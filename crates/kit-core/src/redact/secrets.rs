//! Secrets the kit knows: redacted by value wherever they appear, and fingerprinted so an
//! archive can be searched for them without ever holding them in clear.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::REDACTED;
use super::known::KnownSecrets;

/// Shorter values are not remembered: replacing every `1` or `true` by value would mangle
/// text, and the leak check would find them everywhere. They are still redacted where they
/// stand (under a sensitive name).
pub const MIN_SECRET_LEN: usize = 8;

/// Base of the rolling hash used to find candidates before a SHA-256 confirms them.
const ROLLING_BASE: u32 = 0x0100_0193;

/// A polynomial rolling hash of `bytes` (wrapping arithmetic, base `0x01000193`).
pub fn rolling_hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |h, b| {
        h.wrapping_mul(ROLLING_BASE).wrapping_add(u32::from(*b))
    })
}

fn salted_sha256(salt: &[u8], bytes: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(bytes);
    hasher.finalize().into()
}

/// What is kept of a secret: its length, a 32-bit rolling hash (to find candidates fast) and
/// a salted SHA-256 (to confirm them). Never the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// Length in bytes.
    pub len: u32,
    /// [`rolling_hash`] of the bytes.
    pub rolling: u32,
    /// SHA-256 of the salt followed by the bytes.
    pub sha256: [u8; 32],
}

impl Fingerprint {
    /// The fingerprint of `secret` under `salt`.
    pub fn of(salt: &[u8], secret: &[u8]) -> Self {
        Fingerprint {
            len: u32::try_from(secret.len()).unwrap_or(u32::MAX),
            rolling: rolling_hash(secret),
            sha256: salted_sha256(salt, secret),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Fingerprint", 3)?;
        st.serialize_field("len", &self.len)?;
        st.serialize_field("rolling", &self.rolling)?;
        st.serialize_field("sha256", &hex(&self.sha256))?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            len: u32,
            rolling: u32,
            sha256: String,
        }
        let raw = Raw::deserialize(d)?;
        let sha: [u8; 32] = unhex(&raw.sha256)
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| serde::de::Error::custom("sha256 must be 64 hex digits"))?;
        Ok(Fingerprint {
            len: raw.len,
            rolling: raw.rolling,
            sha256: sha,
        })
    }
}

/// Fingerprints made under one salt: what an archive stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FingerprintSet {
    /// The salt, hex.
    pub salt: String,
    /// The fingerprints.
    pub fingerprints: Vec<Fingerprint>,
}

/// Patterns up to this many bytes in all get the automaton aho-corasick chooses (a DFA for up
/// to 100 patterns); more, an NFA.
const DFA_PATTERN_BYTES: usize = 4 * 1024;

/// An automaton finding `patterns` leftmost-longest: the earliest match, the longest of those
/// starting there, so a secret that contains another is replaced whole.
///
/// A DFA searches fastest, but building one resolves every state's transition on every byte
/// class through failure links, and a pattern that repeats itself (`xxxx…`, padding, a token
/// of zeros in base64) has a failure chain as long as itself: the build was quadratic in its
/// length, 5.5 s for 50 KB and hours for the megabytes a response body may hold under a
/// sensitive name (issue 9's forty-fourth stop). A contiguous NFA keeps the failure links and
/// builds in linear time; it searched a fifth slower than the DFA in the same measurement (10
/// secrets of 40 bytes, 64 KiB of text: 0.84 against 0.69 ms), so the DFA stays for the few
/// short credentials a run usually knows. A contiguous NFA has a limit on its states; past it
/// the noncontiguous one is built, as aho-corasick's own choice does, never none.
pub(crate) fn leftmost_longest<P: AsRef<[u8]>>(
    patterns: &[P],
) -> Result<AhoCorasick, aho_corasick::BuildError> {
    let mut builder = AhoCorasick::builder();
    builder.match_kind(MatchKind::LeftmostLongest);
    let bytes: usize = patterns.iter().map(|p| p.as_ref().len()).sum();
    if bytes <= DFA_PATTERN_BYTES {
        return builder.build(patterns);
    }
    builder
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(patterns)
        .or_else(|_| {
            builder
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .build(patterns)
        })
}

#[derive(Default)]
struct State {
    seen: HashSet<Box<str>>,
    /// How many secrets were remembered.
    secrets: usize,
    /// Every form of every secret searched for: the secret, and [`written_forms`] of it.
    values: Vec<Box<str>>,
    fingerprints: Vec<Fingerprint>,
    matcher: Arc<KnownSecrets>,
    /// Secrets were added since `matcher` was built. Rebuilding waits for the next
    /// replacement, so a body with thousands of new secrets builds an automaton once.
    stale: bool,
    /// How many times the matcher was built.
    builds: u64,
}

impl State {
    fn rebuild(&mut self) {
        self.matcher = Arc::new(self.matcher.with_new(&self.values));
        self.stale = false;
        self.builds += 1;
    }
}

/// The forms `secret` takes when written where a test's traffic carries it, other than as it
/// is: percent-encoded as a URL's component (`%20` for a space) and as a form's value (`+`),
/// and escaped as a JSON string's content. A password with a space or a `@` echoed in a
/// redirect's query, or one with a quote echoed in a JSON body, is the same secret. Only the
/// forms that differ from the secret; most tokens have none.
fn written_forms(secret: &str) -> Vec<String> {
    use super::url::{is_unreserved, percent_encode};
    let mut forms = Vec::new();
    if !secret.bytes().all(is_unreserved) {
        let component = percent_encode(secret, is_unreserved);
        if secret.contains(' ') {
            forms.push(component.replace("%20", "+"));
        }
        forms.push(component);
    }
    if secret.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        let quoted = serde_json::to_string(secret).unwrap_or_default();
        if let Some(escaped) = quoted.get(1..quoted.len().saturating_sub(1)) {
            forms.push(escaped.to_owned());
        }
    }
    forms
}

/// The secrets a run has met: every value the sanitizer redacted (at least
/// [`MIN_SECRET_LEN`] bytes) and every credential given to the kit. Kept in memory only;
/// what leaves the process is their [`Fingerprint`]s.
pub struct SecretRegistry {
    salt: [u8; 16],
    state: RwLock<State>,
}

impl fmt::Debug for SecretRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretRegistry")
            .field("secrets", &self.len())
            .finish_non_exhaustive()
    }
}

impl Default for SecretRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl SecretRegistry {
    /// An empty registry with a random salt.
    pub fn new() -> Self {
        SecretRegistry {
            salt: *uuid::Uuid::new_v4().as_bytes(),
            state: RwLock::new(State::default()),
        }
    }

    /// The process's registry: the one the `kit` facade's sanitizers and panic hook use.
    pub fn global() -> &'static Arc<SecretRegistry> {
        static GLOBAL: OnceLock<Arc<SecretRegistry>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(SecretRegistry::new()))
    }

    /// The salt of this registry's fingerprints.
    pub fn salt(&self) -> [u8; 16] {
        self.salt
    }

    /// Remembers `value` as a secret. Returns false (and remembers nothing) when it is shorter
    /// than [`MIN_SECRET_LEN`], is the redaction marker, or is known already.
    pub fn remember(&self, value: &str) -> bool {
        let value = value.trim();
        if value.len() < MIN_SECRET_LEN || value.contains(REDACTED) {
            return false;
        }
        {
            let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
            if state.seen.contains(value) {
                return false;
            }
        }
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        if !state.seen.insert(value.into()) {
            return false;
        }
        state.secrets += 1;
        for form in std::iter::once(value.to_owned()).chain(written_forms(value)) {
            // A form may equal another secret already known, as that secret.
            if form != value && !state.seen.insert(form.as_str().into()) {
                continue;
            }
            let fingerprint = Fingerprint::of(&self.salt, form.as_bytes());
            state.fingerprints.push(fingerprint);
            state.values.push(form.into());
        }
        state.stale = true;
        true
    }

    /// How many secrets are known (each once, whatever forms of it are searched for).
    pub fn len(&self) -> usize {
        self.state.read().unwrap_or_else(PoisonError::into_inner).secrets
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many times the matcher of known secrets was built (once per replacement that
    /// follows new secrets, however many arrived).
    pub fn matcher_builds(&self) -> u64 {
        self.state.read().unwrap_or_else(PoisonError::into_inner).builds
    }

    /// `text` with every known secret replaced by `[REDACTED]`; borrowed when there is none.
    pub fn replace_known<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.replace_known_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Secrets are whole strings, so each match starts and ends on a character boundary,
            // and what replaces it is text.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// [`replace_known`](Self::replace_known) for a JSON body, keeping it JSON where the text
    /// was: each string's part of a secret is replaced inside its quotes, and each number or
    /// literal a secret touches becomes the string `"[REDACTED]"` whole (a number remembered
    /// under a sensitive name, met again as another member's value), where a bare `[REDACTED]`
    /// would leave the body unreadable to a report and to traffic coverage. The punctuation and
    /// whitespace a secret spans stay. A secret of nothing else, which no token holds, is
    /// replaced as in any text.
    ///
    /// ```
    /// use kit_core::redact::SecretRegistry;
    ///
    /// let secrets = SecretRegistry::new();
    /// secrets.remember("12345678");
    /// secrets.remember("abc\",\"de");
    /// assert_eq!(
    ///     secrets.replace_known_in_json(r#"{"id": 123456789, "note": "was 12345678"}"#),
    ///     r#"{"id": "[REDACTED]", "note": "was [REDACTED]"}"#
    /// );
    /// assert_eq!(
    ///     secrets.replace_known_in_json(r#"{"x":"abc","de":1}"#),
    ///     r#"{"x":"[REDACTED]","[REDACTED]":1}"#
    /// );
    /// ```
    pub fn replace_known_in_json<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let m = self.matcher();
        if !m.is_match(text.as_bytes()) {
            return Cow::Borrowed(text);
        }
        let mut out = replace_known_tokens(&m, text);
        // What a pass keeps and what it writes can make a secret again: the comma two
        // overlapping matches share (`,\n null,` met at a list's first of three nulls is met
        // again at its second), or a number turned into `"[REDACTED]"`, which puts a quote
        // after the text before it. Each pass replaces more of the document's tokens.
        for _ in 0..JSON_PASSES {
            if !m.is_match(out.as_bytes()) {
                return Cow::Owned(out);
            }
            out = replace_known_tokens(&m, &out);
        }
        if m.is_match(out.as_bytes()) {
            // Replaced as any text, the body cannot make one again.
            return self.replace_known(text);
        }
        Cow::Owned(out)
    }

    /// [`replace_known`](Self::replace_known) on bytes that are not text (a binary body).
    pub fn replace_known_bytes<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        let m = self.matcher();
        if !m.is_match(bytes) {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut copied = 0;
        for found in m.find_iter(bytes) {
            out.extend_from_slice(&bytes[copied..found.start]);
            out.extend_from_slice(REDACTED.as_bytes());
            copied = found.end;
        }
        out.extend_from_slice(&bytes[copied..]);
        Cow::Owned(out)
    }

    /// The matcher of every known secret, brought up to date first if secrets arrived since.
    fn matcher(&self) -> Arc<KnownSecrets> {
        let fresh = {
            let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
            (!state.stale).then(|| state.matcher.clone())
        };
        match fresh {
            Some(m) => m,
            None => {
                let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
                if state.stale {
                    state.rebuild();
                }
                state.matcher.clone()
            }
        }
    }

    /// Fingerprints from position `from` on (in the order secrets were remembered), and the
    /// position after the last one: an archive writer stores each once.
    pub fn fingerprints_from(&self, from: usize) -> (Vec<Fingerprint>, usize) {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let all = &state.fingerprints;
        (
            all.get(from..).map(<[Fingerprint]>::to_vec).unwrap_or_default(),
            all.len(),
        )
    }
}

/// Where a leak was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leak {
    /// Byte offset in the scanned bytes.
    pub offset: usize,
    /// Length of the secret.
    pub len: usize,
}

/// A salt and the salted SHA-256 a window must hash to.
type Candidate = (Arc<[u8]>, [u8; 32]);

/// Searches bytes for secrets known by fingerprint (or in clear, from a secrets file).
///
/// For each distinct secret length it rolls a hash over every window of that length, looks the
/// hash up in a bit filter of the secrets' hashes, and confirms the rare window that passes
/// with the salted SHA-256: a scan costs a few operations per byte per distinct length however
/// many secrets there are.
///
/// ```
/// use kit_core::redact::{Fingerprint, LeakScanner};
///
/// let salt = b"salt";
/// let mut scanner = LeakScanner::new();
/// scanner.add_fingerprint(salt, Fingerprint::of(salt, b"tok-3f9a1c77e2"));
/// assert_eq!(scanner.find(b"{\"echo\":\"tok-3f9a1c77e2\"}").map(|l| l.offset), Some(9));
/// assert!(scanner.find(b"nothing to see").is_none());
/// ```
#[derive(Debug, Default, Clone)]
pub struct LeakScanner {
    /// The secrets known by fingerprint.
    lengths: Lengths,
    /// The secrets given in clear.
    clear: Vec<Box<[u8]>>,
    /// How `clear` is searched, made at the first search after a secret is added.
    clear_search: OnceLock<ClearSearch>,
}

/// How secrets given in clear are searched.
#[derive(Debug, Clone)]
enum ClearSearch {
    /// One automaton: one pass finds them all, however many lengths they have.
    Automaton(AhoCorasick),
    /// By their fingerprints, if the automaton could not be built.
    Fingerprints(Lengths),
}

impl ClearSearch {
    fn of(clear: &[Box<[u8]>]) -> Self {
        match leftmost_longest(clear) {
            Ok(automaton) => ClearSearch::Automaton(automaton),
            Err(_) => ClearSearch::Fingerprints(fingerprints_of(clear)),
        }
    }

    fn first_in(&self, bytes: &[u8]) -> Option<Leak> {
        match self {
            ClearSearch::Automaton(automaton) => automaton.find(bytes).map(|m| Leak {
                offset: m.start(),
                len: m.len(),
            }),
            ClearSearch::Fingerprints(lengths) => lengths.first_in(bytes, None),
        }
    }
}

/// Secrets given in clear, as fingerprints under no salt.
fn fingerprints_of(clear: &[Box<[u8]>]) -> Lengths {
    let mut lengths = Lengths::default();
    for secret in clear {
        lengths.add(b"", Fingerprint::of(b"", secret));
    }
    lengths
}

/// A table per distinct secret length.
#[derive(Debug, Default, Clone)]
struct Lengths {
    /// In the order their lengths were first met. Not kept sorted: an archive's fingerprint set
    /// may name any number of lengths, and inserting each in its place would be quadratic.
    tables: Vec<Length>,
    /// Where each length's table is.
    at: FxHashMap<usize, usize>,
    /// `tables`' indices, longest first, sorted at the first search after a new length.
    longest_first: OnceLock<Vec<usize>>,
}

impl Lengths {
    /// Adds `fingerprint`, made under `salt`, to the table of its length.
    fn add(&mut self, salt: &[u8], fingerprint: Fingerprint) {
        let len = fingerprint.len as usize;
        let at = *self.at.entry(len).or_insert_with(|| {
            let bits = if self.tables.len() < ROOMY_LENGTHS {
                ROOMY_FILTER_BITS
            } else {
                SMALL_FILTER_BITS
            };
            self.tables.push(Length::new(len, bits));
            self.longest_first = OnceLock::new();
            self.tables.len() - 1
        });
        self.tables[at].add(fingerprint.rolling, (Arc::from(salt), fingerprint.sha256));
    }

    /// How many fingerprints the tables hold.
    fn count(&self) -> usize {
        self.tables.iter().map(|t| t.count).sum()
    }

    /// The first leak in `bytes` of these secrets, or `first` (a leak found already) if none
    /// is earlier, or as early and longer.
    fn first_in(&self, bytes: &[u8], mut first: Option<Leak>) -> Option<Leak> {
        let order = self.longest_first.get_or_init(|| {
            let mut order: Vec<usize> = (0..self.tables.len()).collect();
            order.sort_unstable_by_key(|&i| std::cmp::Reverse(self.tables[i].len));
            order
        });
        // Longest first, each length searching only where it would replace the leak found so
        // far.
        for length in order.iter().map(|&i| &self.tables[i]) {
            let len = length.len;
            let Some(last) = bytes.len().checked_sub(len) else {
                continue;
            };
            let starts = match first {
                None => last + 1,
                Some(found) if len > found.len => (found.offset + 1).min(last + 1),
                // As long or longer, the leak found starts no later than `last`.
                Some(found) => found.offset,
            };
            if len == 0 || starts == 0 {
                continue;
            }
            if let Some(offset) = length.first_in(&bytes[..starts - 1 + len]) {
                first = Some(Leak { offset, len });
            }
        }
        first
    }
}

/// The secrets of one length.
#[derive(Debug, Clone)]
struct Length {
    len: usize,
    /// `ROLLING_BASE` to the power `len`: the weight of the byte leaving the window, once the
    /// hash is multiplied by the base.
    high_times_base: u32,
    /// A bit per slot, set where a secret's rolling hash falls ([`Length::slot`]). Looking a
    /// window's hash up in a map at every byte was nearly all of an audit's time (15 ns a byte
    /// and length); a bit that is almost always clear answers most windows in a load.
    filter: Vec<u64>,
    /// The filter has `1 << filter_bits` slots.
    filter_bits: u32,
    /// Rolling hash → the secrets that have it.
    candidates: FxHashMap<u32, Vec<Candidate>>,
    count: usize,
}

/// The most slots a length's filter has (2 MiB of bits).
const MOST_FILTER_BITS: u32 = 24;

/// The slots a filter starts with: 2¹⁶ (8 KiB) for the first [`ROOMY_LENGTHS`] lengths, whose
/// filters then pass few windows of text like the secrets' own (at 2¹³ slots for the bench's
/// eight secrets a length, its scan took 5% longer); 2⁶ for lengths past them, so that a
/// hostile fingerprint set naming a great many lengths costs memory in proportion to them.
const ROOMY_FILTER_BITS: u32 = 16;
const SMALL_FILTER_BITS: u32 = 6;
const ROOMY_LENGTHS: usize = 256;

/// Slots per secret, as a filter grows: about one window in 1 024 that is no secret's reaches
/// the map (where windows' hashes fall as by chance), until a length has 16 384 secrets and its
/// filter is as large as it grows.
const SLOTS_PER_SECRET: usize = 1024;

impl Length {
    fn new(len: usize, bits: u32) -> Self {
        Length {
            len,
            // By squaring: a fingerprint may claim a length of four billion.
            high_times_base: ROLLING_BASE.wrapping_pow(u32::try_from(len).unwrap_or(u32::MAX)),
            filter: vec![0; (1 << bits) / 64],
            filter_bits: bits,
            candidates: FxHashMap::default(),
            count: 0,
        }
    }

    /// The rolling hash's filter slot: its top bits once multiplied, since the low bits of a
    /// polynomial hash mod 2³² depend only on the low bits of its terms.
    fn slot(&self, hash: u32) -> usize {
        (hash.wrapping_mul(0x9E37_79B1) >> (32 - self.filter_bits)) as usize
    }

    fn set(&mut self, hash: u32) {
        let slot = self.slot(hash);
        self.filter[slot / 64] |= 1 << (slot % 64);
    }

    fn may_hold(&self, hash: u32) -> bool {
        let slot = self.slot(hash);
        self.filter[slot / 64] >> (slot % 64) & 1 != 0
    }

    fn add(&mut self, hash: u32, candidate: Candidate) {
        self.candidates.entry(hash).or_default().push(candidate);
        self.count += 1;
        let wanted = (self.count * SLOTS_PER_SECRET)
            .next_power_of_two()
            .trailing_zeros()
            .min(MOST_FILTER_BITS);
        if wanted > self.filter_bits {
            self.filter_bits = wanted;
            self.filter = vec![0; (1 << wanted) / 64];
            let hashes: Vec<u32> = self.candidates.keys().copied().collect();
            for hash in hashes {
                self.set(hash);
            }
        } else {
            self.set(hash);
        }
    }

    /// Whether `window`, whose rolling hash is `hash`, is one of the secrets (for a window that
    /// passed the filter).
    fn is_secret(&self, hash: u32, window: &[u8]) -> bool {
        self.candidates.get(&hash).is_some_and(|candidates| {
            candidates
                .iter()
                .any(|(salt, sha)| salted_sha256(salt, window) == *sha)
        })
    }

    /// Where the first of these secrets starts in `bytes`, which is at least `len` long.
    fn first_in(&self, bytes: &[u8]) -> Option<usize> {
        let len = self.len;
        let mut hash = rolling_hash(&bytes[..len]);
        if self.may_hold(hash) && self.is_secret(hash, &bytes[..len]) {
            return Some(0);
        }
        // Each step drops the window's first byte and takes the one after its end.
        for (start, (&leaving, &entering)) in bytes.iter().zip(&bytes[len..]).enumerate() {
            // (hash - leaving·high)·B + entering, with the terms apart from `hash` summed
            // beside it: one multiply and one add stand between a window's hash and the next.
            let step =
                u32::from(entering).wrapping_sub(u32::from(leaving).wrapping_mul(self.high_times_base));
            hash = hash.wrapping_mul(ROLLING_BASE).wrapping_add(step);
            if self.may_hold(hash) && self.is_secret(hash, &bytes[start + 1..start + 1 + len]) {
                return Some(start + 1);
            }
        }
        None
    }
}

impl LeakScanner {
    /// A scanner that knows no secret.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a fingerprint made under `salt`.
    pub fn add_fingerprint(&mut self, salt: &[u8], fingerprint: Fingerprint) {
        self.lengths.add(salt, fingerprint);
    }

    /// Adds every fingerprint of a set; fails when its salt is not hex.
    pub fn add_set(&mut self, set: &FingerprintSet) -> Result<(), String> {
        let salt = unhex(&set.salt).ok_or_else(|| format!("the salt {:?} is not hex", set.salt))?;
        for f in &set.fingerprints {
            self.add_fingerprint(&salt, *f);
        }
        Ok(())
    }

    /// Adds a secret given in clear (from a secrets file).
    pub fn add_secret(&mut self, secret: &[u8]) {
        if !secret.is_empty() {
            self.clear.push(secret.into());
            self.clear_search = OnceLock::new();
        }
    }

    /// How many secrets it knows, by fingerprint or in clear.
    pub fn len(&self) -> usize {
        self.lengths.count() + self.clear.len()
    }

    /// True when it knows none.
    pub fn is_empty(&self) -> bool {
        self.lengths.tables.is_empty() && self.clear.is_empty()
    }

    /// The first leak in `bytes`, by offset; of two secrets that start there, the longer.
    pub fn find(&self, bytes: &[u8]) -> Option<Leak> {
        let first = if self.clear.is_empty() {
            None
        } else {
            self.clear_search
                .get_or_init(|| ClearSearch::of(&self.clear))
                .first_in(bytes)
        };
        self.lengths.first_in(bytes, first)
    }
}

/// How many more times [`SecretRegistry::replace_known_in_json`] replaces what its first pass
/// made a secret again, before it replaces the body as any text: a pass takes one token more
/// at least, and a document needing more than a few has secrets overlapping all through it.
const JSON_PASSES: usize = 4;

/// One pass of [`SecretRegistry::replace_known_in_json`]: each secret `m` finds replaced
/// token by token.
fn replace_known_tokens(m: &KnownSecrets, text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut strings = StringTracker::default();
    for found in m.find_iter(bytes) {
        if found.start < copied {
            // Overlapping one replaced already; what is left of it, a further pass finds.
            continue;
        }
        let inside = strings.inside_at(bytes, found.start);
        // Whole escapes only: a match that starts inside one (`u0041…` of `\u0041…`, or a
        // secret's escaped form `\\u…` found at the second backslash of `\\\u…`) would leave
        // its backslash to escape the marker's `[`, and one that ends inside one would leave
        // the rest of it after the marker.
        let from = strings
            .escape_around(bytes, found.start)
            .unwrap_or(found.start)
            .max(copied);
        let to = strings.past_escape(bytes, found.end);
        let before = out.len();
        match replace_tokens(text, from, to, inside, copied, &mut out) {
            Some(end) => copied = end,
            None => {
                // Nothing but JSON's punctuation and whitespace: no token to replace it in
                // keeps it out, so the body gives up being JSON there rather than let a secret
                // through.
                out.truncate(before);
                out.push_str(&text[copied..from]);
                out.push_str(REDACTED);
                copied = to;
            }
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Writes `text[copied..from]` to `out`, then `from..to` of a JSON text with each run of a
/// string's bytes in it replaced by the marker, and each number or literal it touches
/// replaced whole by the string `"[REDACTED]"`, keeping the quotes, punctuation and whitespace
/// between them: so a secret met across tokens (`abc","cd` in `{"x":"abc","cd":1}`, or a
/// number and what follows it) leaves the body JSON, as one met within a token does. `inside`
/// says whether `from` is inside a string. Returns where the text goes on after what was
/// replaced (past `to` when a number ran on), or `None`, having replaced nothing, when
/// `from..to` holds no byte of a string and no token: JSON's punctuation and whitespace alone.
fn replace_tokens(
    text: &str,
    from: usize,
    to: usize,
    mut inside: bool,
    copied: usize,
    out: &mut String,
) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    if !inside && from < to && is_token_byte(bytes[from]) {
        // Back to the start of the token the match began in.
        while at > copied && is_token_byte(bytes[at - 1]) {
            at -= 1;
        }
    }
    out.push_str(&text[copied..at]);
    let mut replaced = false;
    while at < to {
        if inside {
            let run = at;
            while at < to && bytes[at] != b'"' {
                // An escape's second byte is never the string's end (`\"`).
                if bytes[at] == b'\\' && at + 1 < to {
                    at += 1;
                }
                at += 1;
            }
            if at > run {
                out.push_str(REDACTED);
                replaced = true;
            }
            if at < to {
                out.push('"');
                at += 1;
                inside = false;
            }
        } else if is_token_byte(bytes[at]) {
            while at < bytes.len() && is_token_byte(bytes[at]) {
                at += 1;
            }
            out.push('"');
            out.push_str(REDACTED);
            out.push('"');
            replaced = true;
        } else {
            inside = bytes[at] == b'"';
            out.push(char::from(bytes[at]));
            at += 1;
        }
    }
    replaced.then_some(at)
}

/// A byte of a token outside JSON's strings: a number's or a literal's (`true`, `false`,
/// `null`) in a document, and in text that is not JSON any byte but JSON's punctuation,
/// whitespace and quotes. Every byte that is not one is ASCII, so a token's ends are
/// character boundaries.
fn is_token_byte(b: u8) -> bool {
    !matches!(
        b,
        b'{' | b'}' | b'[' | b']' | b',' | b':' | b'"' | b' ' | b'\t' | b'\n' | b'\r'
    )
}

/// Whether a place in JSON text is inside a string or inside an escape, found by reading
/// forward from where the last question left off: each byte is read once, however many
/// secrets a body holds.
#[derive(Default)]
struct StringTracker {
    /// The first byte not read yet.
    at: usize,
    inside: bool,
    /// The escape the byte at `at` belongs to: where its backslash is, and how many of its
    /// bytes are still to be read (a `u` after the backslash makes four more).
    escape: Option<(usize, u8)>,
}

impl StringTracker {
    /// Reads up to `to`, and says whether the byte there is inside a string.
    fn inside_at(&mut self, bytes: &[u8], to: usize) -> bool {
        self.read_to(bytes, to);
        self.inside
    }

    /// Reads up to `to`, and says where the escape the byte there belongs to begins, if it
    /// belongs to one that begins before it (not if an escape cut short ends there).
    fn escape_around(&mut self, bytes: &[u8], to: usize) -> Option<usize> {
        self.read_to(bytes, to);
        let (backslash, _) = self.escape?;
        bytes
            .get(to)
            .is_some_and(|&b| self.continues_escape(b))
            .then_some(backslash)
    }

    /// Reads up to `to` and on to the end of the escape the byte there belongs to, if any, and
    /// says where that is: `to` when no escape goes on there.
    fn past_escape(&mut self, bytes: &[u8], to: usize) -> usize {
        self.read_to(bytes, to);
        while self.at < bytes.len() && self.continues_escape(bytes[self.at]) {
            self.step(bytes[self.at]);
        }
        self.at
    }

    fn read_to(&mut self, bytes: &[u8], to: usize) {
        while self.at < to {
            self.step(bytes[self.at]);
        }
    }

    /// Whether `b`, the byte at `at`, goes on the escape begun before it. Only ASCII bytes do,
    /// so that an escape never ends inside a character of text that is not JSON (`\é`,
    /// `\u€`): where one is cut short, the byte counts as any other.
    fn continues_escape(&self, b: u8) -> bool {
        match self.escape {
            Some((backslash, _)) if self.at == backslash + 1 => b.is_ascii(),
            Some(_) => b.is_ascii_hexdigit(),
            None => false,
        }
    }

    fn step(&mut self, b: u8) {
        if let Some((backslash, left)) = self.escape {
            if self.continues_escape(b) {
                self.escape = if self.at == backslash + 1 {
                    (b == b'u').then_some((backslash, 4))
                } else {
                    (left > 1).then_some((backslash, left - 1))
                };
                self.at += 1;
                return;
            }
            self.escape = None;
        }
        if self.inside && b == b'\\' {
            self.escape = Some((self.at, 1));
        } else if b == b'"' {
            self.inside = !self.inside;
        }
        self.at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_and_the_marker_are_not_remembered() {
        let r = SecretRegistry::new();
        assert!(!r.remember("1234567"));
        assert!(!r.remember("[REDACTED]"));
        assert!(r.remember("12345678"));
        assert!(!r.remember("12345678"), "known already");
        assert_eq!(r.len(), 1);
    }

    /// A secret with a space, a `@` or a quote is replaced where it comes back percent-encoded
    /// (a URL's component, a form's value) or escaped (a JSON string), and the audit knows
    /// those forms by fingerprint too. Each counts as one secret.
    #[test]
    fn a_secret_is_known_in_the_forms_urls_forms_and_json_write_it() {
        let r = SecretRegistry::new();
        assert!(r.remember("correct horse@1!"));
        assert!(r.remember("say \"hi\" now"));
        assert_eq!(r.len(), 2);
        for echo in [
            "/cb?pw=correct%20horse%401%21&x=1",
            "pw=correct+horse%401%21&x=1",
            r#"{"note": "say \"hi\" now"}"#,
        ] {
            let replaced = r.replace_known(echo);
            assert!(replaced.contains("[REDACTED]"), "{echo} became {replaced}");
            assert!(
                !replaced.contains("horse") && !replaced.contains("hi\\"),
                "{replaced}"
            );
        }
        let salt = r.salt();
        let mut scanner = LeakScanner::new();
        for f in r.fingerprints_from(0).0 {
            scanner.add_fingerprint(&salt, f);
        }
        for stored in [
            "x correct%20horse%401%21 y",
            "x correct+horse%401%21 y",
            r#"x say \"hi\" now y"#,
        ] {
            assert!(scanner.find(stored.as_bytes()).is_some(), "{stored}");
        }
        // A token with none of those characters has no other form.
        let plain = SecretRegistry::new();
        plain.remember("tok-3f9a1c77e2");
        assert_eq!(plain.fingerprints_from(0).0.len(), 1);
    }

    #[test]
    fn known_secrets_are_replaced_wherever_they_appear_longest_first() {
        let r = SecretRegistry::new();
        r.remember("abcdefgh");
        r.remember("abcdefgh-longer");
        assert_eq!(
            r.replace_known("x abcdefgh-longer y abcdefgh z"),
            "x [REDACTED] y [REDACTED] z"
        );
        assert!(matches!(r.replace_known("clean"), Cow::Borrowed(_)));
    }

    #[test]
    fn thousands_of_new_secrets_build_the_matcher_once() {
        let r = SecretRegistry::new();
        for i in 0..20_000 {
            r.remember(&format!("tok-{i:08x}-abcdef"));
        }
        assert_eq!(r.replace_known("x tok-00004e1f-abcdef y"), "x [REDACTED] y");
        assert_eq!(r.replace_known("tok-00000001-abcdef"), "[REDACTED]");
        // Building per insert is quadratic: 20 000 builds over a growing set.
        assert_eq!(r.matcher_builds(), 1);
        r.remember("one-more-secret");
        assert_eq!(r.replace_known("one-more-secret"), "[REDACTED]");
        assert_eq!(r.matcher_builds(), 2);
    }

    #[test]
    fn the_scanner_finds_every_fingerprinted_secret_and_nothing_else() {
        let r = SecretRegistry::new();
        let secrets: Vec<String> = (0..100)
            .map(|i| format!("secret-{i:03}-{}", "x".repeat(i % 7)))
            .collect();
        for s in &secrets {
            assert!(r.remember(s));
        }
        let mut scanner = LeakScanner::new();
        for f in r.fingerprints_from(0).0 {
            scanner.add_fingerprint(&r.salt(), f);
        }
        let haystack = "lorem ipsum ".repeat(1000);
        assert!(scanner.find(haystack.as_bytes()).is_none());
        for s in &secrets {
            let planted = format!("{haystack}{s}{haystack}");
            let leak = scanner.find(planted.as_bytes()).unwrap();
            assert_eq!(&planted[leak.offset..leak.offset + leak.len], s.as_str());
        }
    }

    /// Two texts of one length with one rolling hash: the salted SHA-256 tells them apart.
    #[test]
    fn the_scanner_confirms_a_candidate_before_it_reports_it() {
        let (secret, twin) = ("02X66Rem0krX", "XbZpAbuaDYwz");
        assert_eq!(rolling_hash(secret.as_bytes()), rolling_hash(twin.as_bytes()));
        let r = SecretRegistry::new();
        assert!(r.is_empty());
        assert!(r.remember(secret));
        assert_eq!((r.len(), r.is_empty()), (1, false));
        let mut scanner = LeakScanner::new();
        for f in r.fingerprints_from(0).0 {
            scanner.add_fingerprint(&r.salt(), f);
        }
        assert!(scanner.find(format!("a {twin} b").as_bytes()).is_none());
        // The first window too is confirmed, not taken on its hash.
        assert!(scanner.find(twin.as_bytes()).is_none());
        assert!(scanner.find(format!("{twin} {secret}").as_bytes()).is_some());
        let leak = scanner.find(format!("a {secret} b").as_bytes()).unwrap();
        assert_eq!((leak.offset, leak.len), (2, secret.len()));
    }

    /// Secrets given in clear: the earliest leak wins whatever the order the lengths are
    /// tried in, a text as long as a secret can be it, and a shorter one is no error.
    #[test]
    fn the_scanner_reports_the_earliest_leak_of_secrets_given_in_clear() {
        let secrets: Vec<String> = (10..18)
            .map(|len| format!("{len}{}", "k".repeat(len - 2)))
            .collect();
        // Longest first, so each secret starts before every shorter one.
        let text: String = secrets.iter().rev().map(|s| format!("..{s}")).collect();
        // Each scanner's tables iterate in an order of their own.
        for _ in 0..8 {
            let mut scanner = LeakScanner::new();
            assert!(scanner.is_empty());
            scanner.add_secret(b"");
            assert!(scanner.is_empty());
            for s in &secrets {
                scanner.add_secret(s.as_bytes());
            }
            assert_eq!((scanner.len(), scanner.is_empty()), (8, false));
            let leak = scanner.find(text.as_bytes()).unwrap();
            assert_eq!((leak.offset, leak.len), (2, 17));
            assert_eq!(scanner.find(secrets[0].as_bytes()).map(|l| l.offset), Some(0));
            assert!(scanner.find(b"short").is_none());
        }
    }

    /// A secrets file may hold a long secret that repeats itself: the scanner's automaton is
    /// built in linear time all the same (see `leftmost_longest`), and finds it.
    #[test]
    fn the_scanner_takes_long_repetitive_secrets_given_in_clear() {
        let found = crate::redact::tests::linear(|| {
            let mut scanner = LeakScanner::new();
            scanner.add_secret("ab".repeat(1_000_000).as_bytes());
            scanner.add_secret(b"short-one");
            let text = format!("..{}..", "ab".repeat(1_000_000));
            (scanner.find(text.as_bytes()), scanner.find(b"a short-one"))
        });
        assert_eq!(found.0.map(|l| (l.offset, l.len)), Some((2, 2_000_000)));
        assert_eq!(found.1.map(|l| (l.offset, l.len)), Some((2, 9)));
    }

    /// The earliest offset where any of `secrets` starts in `bytes`, the longest there: what
    /// `LeakScanner::find` must report, found window by window.
    fn first_by_brute_force(secrets: &[Vec<u8>], bytes: &[u8]) -> Option<Leak> {
        (0..bytes.len()).find_map(|offset| {
            secrets
                .iter()
                .filter(|s| !s.is_empty() && bytes[offset..].starts_with(s))
                .map(|s| s.len())
                .max()
                .map(|len| Leak { offset, len })
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// Texts of two letters meet short secrets of the same letters everywhere, overlapping,
        /// at the start and at the end; the scan agrees with a search window by window.
        /// Each secret is given in clear or by fingerprint, so the automaton and the rolling
        /// hashes meet in one search; the clear ones are also searched by their fingerprints
        /// alone, as they are when the automaton cannot be built.
        #[test]
        fn the_scanner_finds_what_a_brute_force_search_finds(
            secrets in proptest::collection::vec(
                (proptest::collection::vec(b'a'..=b'b', 1..7), proptest::bool::ANY),
                0..6,
            ),
            bytes in proptest::collection::vec(b'a'..=b'c', 0..80),
        ) {
            let mut scanner = LeakScanner::new();
            for (secret, in_clear) in &secrets {
                if *in_clear {
                    scanner.add_secret(secret);
                } else {
                    scanner.add_fingerprint(b"salt", Fingerprint::of(b"salt", secret));
                }
            }
            let all: Vec<Vec<u8>> = secrets.iter().map(|(s, _)| s.clone()).collect();
            proptest::prop_assert_eq!(scanner.find(&bytes), first_by_brute_force(&all, &bytes));
            let clear: Vec<Box<[u8]>> = secrets.iter().filter(|(_, c)| *c).map(|(s, _)| s.as_slice().into()).collect();
            proptest::prop_assert_eq!(
                ClearSearch::Fingerprints(fingerprints_of(&clear)).first_in(&bytes),
                first_by_brute_force(&clear.iter().map(|s| s.to_vec()).collect::<Vec<_>>(), &bytes)
            );
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let text = "([a-z\"\\\\/ :,{}\\[\\]\u{1}\n\t]|é|€|😀){0,10}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e12f64..1e12).prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(text, inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any stretch of a document's text remembered as a secret: it never comes out, and
        /// the document stays JSON unless the stretch is JSON's punctuation and whitespace
        /// alone, which no token holds. Nor does it come out of either half of the document
        /// cut in two, which is no JSON.
        #[test]
        fn a_secret_anywhere_in_a_document_leaves_it_json_and_does_not_come_out(
            value in any_json(),
            pretty in proptest::bool::ANY,
            start in 0.0..1.0f64,
            len in 8usize..40,
            cut in 0.0..1.0f64,
        ) {
            // The value twice, so that what is remembered recurs, and a number.
            let value = serde_json::json!({ "first": value, "again": [value, 12345678] });
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let mut from = (start * text.len().saturating_sub(8) as f64) as usize;
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            // Remembered values are trimmed: take bytes on until 8 are left after it.
            let rest = text[from..].trim_start();
            let mut to = len.min(rest.len());
            let secret = loop {
                while !rest.is_char_boundary(to) {
                    to += 1;
                }
                let secret = rest[..to].trim_end();
                if secret.len() >= 8 || to == rest.len() {
                    break secret;
                }
                to += 1;
            };
            let r = SecretRegistry::new();
            proptest::prop_assume!(r.remember(secret));
            let out = r.replace_known_in_json(&text);
            proptest::prop_assert!(!out.contains(secret), "{} in {}", secret, out);
            if secret.bytes().any(is_token_byte) {
                proptest::prop_assert!(
                    serde_json::from_str::<serde_json::Value>(&out).is_ok(),
                    "{} with {} became {}", text, secret, out
                );
            }
            // Cut short, the text is no JSON, and strings may be open where they were closed:
            // the secret still never comes out.
            let mut cut = (cut * text.len() as f64) as usize;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            for short in [&text[..cut], &text[cut..]] {
                let out = r.replace_known_in_json(short);
                proptest::prop_assert!(!out.contains(secret), "{} in {} of {}", secret, out, short);
            }
        }
    }

    /// Two secrets starting at one offset: the longer is the leak, whichever came first, each
    /// given in clear or by fingerprint.
    #[test]
    fn of_two_secrets_starting_together_the_longer_is_reported() {
        for secrets in [["token-123", "token-123-456"], ["token-123-456", "token-123"]] {
            for in_clear in [[true, true], [true, false], [false, true], [false, false]] {
                let mut scanner = LeakScanner::new();
                for (secret, in_clear) in secrets.iter().zip(in_clear) {
                    if in_clear {
                        scanner.add_secret(secret.as_bytes());
                    } else {
                        scanner.add_fingerprint(b"s", Fingerprint::of(b"s", secret.as_bytes()));
                    }
                }
                assert_eq!(scanner.len(), 2);
                assert_eq!(
                    scanner.find(b"x token-123-456 y"),
                    Some(Leak { offset: 2, len: 13 }),
                    "{secrets:?} {in_clear:?}"
                );
            }
        }
    }

    /// Leaks found by the automaton bound the fingerprints' search, up to the last window: a
    /// secret known by fingerprint that starts sooner, or as soon and is longer, still wins
    /// when it ends where the bytes do.
    #[test]
    fn a_fingerprinted_secret_replaces_a_clear_one_up_to_the_last_window() {
        let cases: [(&str, &str, &[u8], Leak); 3] = [
            // The same length, one byte sooner.
            ("ab", "ba", b"bab", Leak { offset: 0, len: 2 }),
            // As soon and longer, ending with the bytes.
            ("a", "ab", b"cab", Leak { offset: 1, len: 2 }),
            // Shorter and as soon: the clear one stands.
            ("ab", "a", b"cab", Leak { offset: 1, len: 2 }),
        ];
        for (in_clear, fingerprinted, bytes, leak) in cases {
            let mut scanner = LeakScanner::new();
            scanner.add_secret(in_clear.as_bytes());
            scanner.add_fingerprint(b"s", Fingerprint::of(b"s", fingerprinted.as_bytes()));
            assert_eq!(scanner.find(bytes), Some(leak), "{in_clear} {fingerprinted}");
        }
    }

    /// An archive's fingerprint set may name any lengths, up to four billion, and any number of
    /// them: taking them in costs neither time in proportion to a length nor memory of a
    /// full-sized filter each, and a search looks only at lengths that fit.
    #[test]
    fn a_hostile_fingerprint_set_of_many_and_huge_lengths_is_taken_in() {
        let mut scanner = LeakScanner::new();
        for len in (1..=50_000u32).chain(u32::MAX - 1_000..=u32::MAX) {
            scanner.add_fingerprint(
                b"s",
                Fingerprint {
                    len,
                    rolling: len,
                    sha256: [0; 32],
                },
            );
        }
        scanner.add_fingerprint(b"s", Fingerprint::of(b"s", b"the-secret"));
        assert_eq!(scanner.len(), 51_002);
        assert_eq!(scanner.find(b"is the-secret here").map(|l| l.offset), Some(3));
    }

    /// The automaton over secrets given in clear is built again once one is added after a
    /// search.
    #[test]
    fn a_secret_added_after_a_search_is_searched_for() {
        let mut scanner = LeakScanner::new();
        scanner.add_secret(b"first-secret");
        assert!(scanner.find(b"a second-secret").is_none());
        scanner.add_secret(b"second-secret");
        assert_eq!(scanner.find(b"a second-secret").map(|l| l.offset), Some(2));
        assert_eq!(scanner.clone().find(b"first-secret").map(|l| l.len), Some(12));
    }

    /// A secret found in a JSON string across an escape's edge takes the whole escape with it,
    /// so the body stays JSON: at the start (`u0041…` of `\u0041…`; the escaped form `\\u…` of
    /// a secret with a backslash, met at the second backslash of `\\\u…`, as a private key's
    /// line was in the property test that found this) and at the end (`…\` of `…\"`). Text
    /// that is not JSON (an escape cut short before a multi-byte character) is not cut inside
    /// a character.
    #[test]
    fn a_secret_in_a_json_string_is_replaced_with_the_escapes_it_touches() {
        let r = SecretRegistry::new();
        for secret in [
            "u0041BCDEFGH",
            "\\u0001eyJhbGciOiJIUzI1NiJ9",
            "QRSTUVWX\\",
            "zyxwvuts",
        ] {
            assert!(r.remember(secret));
        }
        for (body, expected) in [
            (r#"{"a":"\u0041BCDEFGH!"}"#, r#"{"a":"[REDACTED]!"}"#),
            (r#"{"a":"\\\u0001eyJhbGciOiJIUzI1NiJ9"}"#, r#"{"a":"[REDACTED]"}"#),
            (
                r#"{"a":"x\\u0001eyJhbGciOiJIUzI1NiJ9"}"#,
                r#"{"a":"x[REDACTED]"}"#,
            ),
            (r#"{"a":"QRSTUVWX\"","b":1}"#, r#"{"a":"[REDACTED]","b":1}"#),
            (r#"{"a":"QRSTUVWX\u0041"}"#, r#"{"a":"[REDACTED]"}"#),
        ] {
            let replaced = r.replace_known_in_json(body);
            assert_eq!(replaced, expected, "{body}");
            serde_json::from_str::<serde_json::Value>(&replaced).expect(expected);
        }
        // An escape cut short (`\u12` and no more digits) ends before the secret, and stays.
        assert_eq!(
            r.replace_known_in_json(r#""\u12zyxwvuts""#),
            r#""\u12[REDACTED]""#
        );
        for not_json in ["\"QRSTUVWX\\é\"", "\"QRSTUVWX\\u€\"", "\"\\u0041BCDEFGH\\"] {
            let replaced = r.replace_known_in_json(not_json);
            assert!(replaced.contains(REDACTED), "{not_json} became {replaced}");
            assert!(
                !replaced.contains("BCDEFGH") && !replaced.contains("QRSTU"),
                "{replaced}"
            );
        }
    }

    /// A secret met across tokens keeps the body JSON: each string's part of it is replaced
    /// inside its quotes, each number or literal it touches becomes the string `"[REDACTED]"`,
    /// and the punctuation and whitespace between stay. One of punctuation alone has no token
    /// to be replaced in, and is replaced as in any text. Where a pass makes a secret again,
    /// another replaces it.
    #[test]
    fn a_secret_across_json_tokens_is_replaced_token_by_token() {
        let r = SecretRegistry::new();
        for secret in ["abc\",\"cd", "5678, true", "yz\": [123", "], [], ["] {
            assert!(r.remember(secret), "{secret}");
        }
        for (body, expected) in [
            (r#"{"x":"abc","cd":1}"#, r#"{"x":"[REDACTED]","[REDACTED]":1}"#),
            (r#"["xabc","cdx"]"#, r#"["x[REDACTED]","[REDACTED]x"]"#),
            (r#"[12345678, true]"#, r#"["[REDACTED]", "[REDACTED]"]"#),
            (r#"{"xyz": [1234, 5]}"#, r#"{"x[REDACTED]": ["[REDACTED]", 5]}"#),
            // The secret's escaped form, inside one string.
            (r#"["xyz\": [123"]"#, r#"["x[REDACTED]"]"#),
        ] {
            let replaced = r.replace_known_in_json(body);
            assert_eq!(replaced, expected, "{body}");
            serde_json::from_str::<serde_json::Value>(&replaced).expect(expected);
        }
        assert_eq!(r.replace_known_in_json("[[1], [], [2]]"), "[[1[REDACTED]2]]");

        // What one pass keeps or writes makes a secret again, and the next replaces it: a comma
        // two matches share, and a quote written before a number's replacement.
        let r = SecretRegistry::new();
        r.remember(",  null,");
        r.remember("false, \"");
        for (body, expected) in [
            (
                "[1,  null,  null,  null]",
                r#"[1,  "[REDACTED]",  "[REDACTED]",  null]"#,
            ),
            (r#"[false, false, "a"]"#, r#"["[REDACTED]", "[REDACTED]", "a"]"#),
        ] {
            assert_eq!(r.replace_known_in_json(body), expected, "{body}");
        }
    }

    /// A length's filter grows with its secrets: every secret added before and after a growth
    /// is still found, and a window that is none of them is not.
    #[test]
    fn every_secret_is_found_after_the_filter_grows() {
        let secrets: Vec<String> = (0..5_000).map(|i| format!("tok-{i:08}")).collect();
        let mut scanner = LeakScanner::new();
        for secret in &secrets {
            scanner.add_fingerprint(b"salt", Fingerprint::of(b"salt", secret.as_bytes()));
        }
        assert_eq!(scanner.len(), 5_000);
        for secret in secrets.iter().step_by(7).chain(secrets.last()) {
            let text = format!("..{secret}..");
            assert_eq!(
                scanner.find(text.as_bytes()).map(|l| l.offset),
                Some(2),
                "{secret}"
            );
        }
        assert_eq!(scanner.find(b"..tok-00005000.."), None);
    }

    /// A run's fingerprint set, as an archive stores it, is what `kit-cli audit` searches for;
    /// a set whose salt is not hex is refused.
    #[test]
    fn a_scanner_searches_for_a_stored_fingerprint_set() {
        let r = SecretRegistry::new();
        r.remember("hunter2-hunter2");
        let set = FingerprintSet {
            salt: hex(&r.salt()),
            fingerprints: r.fingerprints_from(0).0,
        };
        let mut scanner = LeakScanner::new();
        scanner.add_set(&set).unwrap();
        assert_eq!(scanner.len(), 1);
        assert_eq!(scanner.find(b"pw=hunter2-hunter2").map(|l| l.offset), Some(3));
        let damaged = FingerprintSet {
            salt: "not hex".into(),
            ..set
        };
        let mut scanner = LeakScanner::new();
        assert!(scanner.add_set(&damaged).unwrap_err().contains("not hex"));
        assert!(scanner.is_empty());
    }

    #[test]
    fn fingerprint_sets_round_trip_through_json() {
        let set = FingerprintSet {
            salt: hex(b"0123456789abcdef"),
            fingerprints: vec![Fingerprint::of(b"0123456789abcdef", b"hunter2-hunter2")],
        };
        let json = serde_json::to_string(&set).unwrap();
        assert!(!json.contains("hunter2"));
        assert_eq!(serde_json::from_str::<FingerprintSet>(&json).unwrap(), set);
    }
}
