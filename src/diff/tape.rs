//! A JSON document's structure, found in one pass.
//!
//! [`reduce`](super::reduce) compares two versions of an object member by
//! member and descends only where they differ. Read through serde, every level
//! it descends reads the bytes below it again (a Deployment's pod template
//! four times when an image changed). A [`Tape`] reads the document once and
//! keeps where each value starts and ends, and which members or items each
//! object or list holds, so descending costs nothing more.
//!
//! The grammar is JSON's (RFC 8259), as strict as serde_json's: a document the
//! tape accepts is one serde_json parses, and the other way round. Values are
//! not decoded here: a string's escapes are checked, a number's digits, never
//! converted; whoever needs a value parses its span with serde_json.

use std::borrow::Cow;

/// How many objects and lists may nest, as serde_json allows (its recursion
/// limit of 128 counts down to the first that fails).
const MAX_DEPTH: usize = 127;

/// One value of the document (offsets and indices fit in 32 bits: a
/// document is at most 4 GiB, [`Tape::new`] refuses larger ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    /// Where its text starts and ends in the document.
    start: u32,
    end: u32,
    /// The index of the first node after its subtree (its next sibling's).
    after: u32,
    /// For a member of an object: where its key's text starts and ends,
    /// inside the quotes. Any other value's is empty, where the value starts
    /// (so that every offset of a node moves alike, [`Tape::new_like`]).
    key: (u32, u32),
    /// Whether the key holds escapes.
    escaped: bool,
    kind: Kind,
}

impl Node {
    fn span(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    Scalar,
}

/// The structure of one JSON document: its values in document order, each
/// with its span and its subtree.
pub(super) struct Tape<'a> {
    text: &'a str,
    nodes: Vec<Node>,
}

/// One value of a [`Tape`]: its text, and its members or items.
#[derive(Clone, Copy)]
pub(super) struct Raw<'t> {
    tape: &'t Tape<'t>,
    node: usize,
}

impl<'a> Tape<'a> {
    /// Reads `text`, a whole JSON document (whitespace around it allowed).
    pub(super) fn new(text: &'a str) -> Result<Tape<'a>, TapeError> {
        Tape::scan(text, None).map(|(tape, _)| tape)
    }

    /// [`Tape::new`] for a document much like `guide`'s (the next version of
    /// an object): a value whose bytes are those of the value at the same
    /// place of `guide` is not read again, its nodes are `guide`'s, moved.
    /// The tape is the one [`Tape::new`] makes, and so is any error.
    pub(super) fn new_like(text: &'a str, guide: &Tape<'_>) -> Result<Tape<'a>, TapeError> {
        Tape::scan(text, Some(guide)).map(|(tape, _)| tape)
    }

    /// The tape of `text`, and how many of its nodes were the guide's.
    fn scan(text: &'a str, guide: Option<&Tape<'_>>) -> Result<(Tape<'a>, usize), TapeError> {
        if u32::try_from(text.len()).is_err() {
            return Err(TapeError {
                what: "a document of 4 GiB or more",
                at: 0,
            });
        }
        let mut scan = Scan {
            bytes: text.as_bytes(),
            pos: 0,
            nodes: Vec::with_capacity(text.len() / 16),
            copied: 0,
            guide: guide.map_or(
                Guide {
                    text: &[],
                    nodes: &[],
                },
                |g| Guide {
                    text: g.text.as_bytes(),
                    nodes: &g.nodes,
                },
            ),
        };
        scan.ws();
        let key = (scan.pos, scan.pos, false);
        if guide.is_some() {
            scan.value::<true>(key, 0, 0)?;
        } else {
            scan.value::<false>(key, 0, 0)?;
        }
        scan.ws();
        if scan.pos != scan.bytes.len() {
            return Err(scan.error("trailing characters"));
        }
        let copied = scan.copied;
        Ok((
            Tape {
                text,
                nodes: scan.nodes,
            },
            copied,
        ))
    }

    /// The document's value.
    pub(super) fn root(&self) -> Raw<'_> {
        Raw {
            tape: self,
            node: 0,
        }
    }
}

impl<'t> Raw<'t> {
    /// The value's JSON text, exactly as the document has it.
    pub(super) fn get(&self) -> &'t str {
        &self.tape.text[self.tape.nodes[self.node].span()]
    }

    pub(super) fn is_object(&self) -> bool {
        self.tape.nodes[self.node].kind == Kind::Object
    }

    pub(super) fn is_array(&self) -> bool {
        self.tape.nodes[self.node].kind == Kind::Array
    }

    /// The values directly inside an object or a list, in document order.
    fn children(&self) -> impl Iterator<Item = Raw<'t>> + 't {
        let tape = self.tape;
        let end = tape.nodes[self.node].after as usize;
        let mut next = self.node + 1;
        std::iter::from_fn(move || {
            (next < end).then(|| {
                let node = next;
                next = tape.nodes[node].after as usize;
                Raw { tape, node }
            })
        })
    }

    /// An object's members, keys decoded (borrowed unless they had escapes),
    /// in document order, duplicates included; `None` for any other value.
    pub(super) fn members(&self) -> Option<Vec<(Cow<'t, str>, Raw<'t>)>> {
        if !self.is_object() {
            return None;
        }
        let mut out = Vec::with_capacity(self.children().count());
        for member in self.keyed() {
            out.push(member?);
        }
        Some(out)
    }

    /// An object's members as [`Raw::members`] gives them, one at a time,
    /// without a list; `None` for a key whose escapes do not decode (the
    /// tape checked them: never). Nothing for any other value.
    pub(super) fn keyed(&self) -> impl Iterator<Item = Option<(Cow<'t, str>, Raw<'t>)>> + 't {
        let object = self.is_object();
        self.children()
            .filter(move |_| object)
            .map(|child| Some((child.key()?, child)))
    }

    /// An object's member named `key`; of several, the last (as a parser
    /// keeps it). `None` for any other value.
    pub(super) fn member(&self, key: &str) -> Option<Raw<'t>> {
        if !self.is_object() {
            return None;
        }
        let tape = self.tape;
        // Keys compared as they are written, decoded only with escapes.
        self.children()
            .filter(|child| {
                let node = &tape.nodes[child.node];
                if node.escaped {
                    child.key().is_some_and(|k| k == key)
                } else {
                    &tape.text[node.key.0 as usize..node.key.1 as usize] == key
                }
            })
            .last()
    }

    /// The key this value is a member under, decoded: borrowed from the
    /// document unless it has escapes (the quotes around it are part of
    /// the document). Only a member has one.
    fn key(&self) -> Option<Cow<'t, str>> {
        let node = &self.tape.nodes[self.node];
        let (start, end) = (node.key.0 as usize, node.key.1 as usize);
        if !node.escaped {
            return self.tape.text.get(start..end).map(Cow::Borrowed);
        }
        let quoted = self.tape.text.get(start.checked_sub(1)?..end + 1)?;
        decoded(quoted, true)
    }

    /// A string value, decoded (borrowed unless it has escapes); `None` for
    /// any other value.
    pub(super) fn as_str(&self) -> Option<Cow<'t, str>> {
        let text = self.get();
        if self.is_object() || self.is_array() || !text.starts_with('"') {
            return None;
        }
        decoded(text, text.contains('\\'))
    }

    /// A list's items, in order; `None` for any other value.
    pub(super) fn items(&self) -> Option<Vec<Raw<'t>>> {
        self.is_array().then(|| self.children().collect())
    }
}

/// A JSON string's text (`quoted`, quotes included), decoded: borrowed
/// from inside the quotes unless it is `escaped`.
fn decoded(quoted: &str, escaped: bool) -> Option<Cow<'_, str>> {
    if escaped {
        serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
    } else {
        quoted.get(1..quoted.len() - 1).map(Cow::Borrowed)
    }
}

/// Why a document is not JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TapeError {
    pub what: &'static str,
    pub at: usize,
}

impl std::fmt::Display for TapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for TapeError {}

struct Scan<'b> {
    bytes: &'b [u8],
    pos: usize,
    nodes: Vec<Node>,
    /// The tape of a document much like this one ([`Tape::new_like`]); empty
    /// without one.
    guide: Guide<'b>,
    /// How many nodes were the guide's.
    copied: usize,
}

/// A tape read from: its text and its nodes.
#[derive(Clone, Copy)]
struct Guide<'g> {
    text: &'g [u8],
    nodes: &'g [Node],
}

/// How many members past the expected one a member's key is looked for
/// among the guide's, when they do not come in the same order.
const GUIDE_LOOKAHEAD: usize = 4;

impl Scan<'_> {
    fn error(&self, what: &'static str) -> TapeError {
        TapeError { what, at: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, what: &'static str) -> Result<(), TapeError> {
        if self.peek() != Some(byte) {
            return Err(self.error(what));
        }
        self.pos += 1;
        Ok(())
    }

    /// One value at `pos` (no whitespace before it), as a node with `key`;
    /// when `GUIDED`, `g` is the node of the guide's tape at the same place
    /// (at the same depth: the guide's root or a child of a guide). Apart,
    /// so that reading without a guide pays nothing for it.
    fn value<const GUIDED: bool>(
        &mut self,
        key: (usize, usize, bool),
        depth: usize,
        g: usize,
    ) -> Result<(), TapeError> {
        if GUIDED {
            let from = self.guide.nodes[g].start as usize;
            if self.same_as_guide(g, from) {
                let own = self.nodes.len() - (self.guide.nodes[g].after as usize - g);
                let own = &mut self.nodes[own];
                own.key = (key.0 as u32, key.1 as u32);
                own.escaped = key.2;
                return Ok(());
            }
        }
        let index = self.nodes.len();
        // Offsets fit: the document is under 4 GiB; so do indices, fewer.
        let start = self.pos as u32;
        self.nodes.push(Node {
            start,
            end: start,
            after: 0,
            key: (key.0 as u32, key.1 as u32),
            escaped: key.2,
            kind: Kind::Scalar,
        });
        let kind = match self.peek() {
            Some(open @ (b'{' | b'[')) => {
                if depth >= MAX_DEPTH {
                    return Err(self.error("nested too deep"));
                }
                self.pos += 1;
                self.ws();
                let (close, kind) = if open == b'{' {
                    (b'}', Kind::Object)
                } else {
                    (b']', Kind::Array)
                };
                // The guide's children, when the guide is the same kind of
                // value: the next one expected, and where they end.
                let (mut next, end) = if GUIDED && self.guide.nodes[g].kind == kind {
                    (g + 1, self.guide.nodes[g].after as usize)
                } else {
                    (0, 0)
                };
                if self.peek() == Some(close) {
                    self.pos += 1;
                } else {
                    loop {
                        if kind == Kind::Array {
                            let key = (self.pos, self.pos, false);
                            if GUIDED && next < end {
                                let child = next;
                                next = self.guide.nodes[child].after as usize;
                                self.value::<true>(key, depth + 1, child)?;
                            } else {
                                self.value::<false>(key, depth + 1, 0)?;
                            }
                        } else if GUIDED
                            && next < end
                            && self.same_as_guide(next, self.guide.nodes[next].key.0 as usize - 1)
                        {
                            // The member, key and value, is the one expected.
                            next = self.guide.nodes[next].after as usize;
                        } else {
                            let key = self.string()?;
                            self.ws();
                            self.expect(b':', "expected `:`")?;
                            self.ws();
                            let child = if GUIDED {
                                self.guide_member(key, &mut next, end)
                            } else {
                                None
                            };
                            match child {
                                Some(child) => self.value::<true>(key, depth + 1, child)?,
                                None => self.value::<false>(key, depth + 1, 0)?,
                            }
                        }
                        self.ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                self.ws();
                            }
                            Some(b) if b == close => {
                                self.pos += 1;
                                break;
                            }
                            _ => return Err(self.error("expected `,` or the value's end")),
                        }
                    }
                }
                kind
            }
            Some(b'"') => {
                self.string()?;
                Kind::Scalar
            }
            Some(b't') => self.literal(b"true")?,
            Some(b'f') => self.literal(b"false")?,
            Some(b'n') => self.literal(b"null")?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            _ => return Err(self.error("expected a value")),
        };
        let after = self.nodes.len() as u32;
        let node = &mut self.nodes[index];
        node.end = self.pos as u32;
        node.after = after;
        node.kind = kind;
        Ok(())
    }

    /// The guide's member for the member whose key was just read: the one
    /// expected next (`next`, before `end`) or one of the few after it with
    /// the same key as written; `next` moves past it.
    fn guide_member(
        &self,
        key: (usize, usize, bool),
        next: &mut usize,
        end: usize,
    ) -> Option<usize> {
        if *next >= end {
            return None;
        }
        let written = &self.bytes[key.0..key.1];
        let mut c = *next;
        for _ in 0..=GUIDE_LOOKAHEAD {
            if c >= end {
                return None;
            }
            let node = &self.guide.nodes[c];
            if &self.guide.text[node.key.0 as usize..node.key.1 as usize] == written {
                *next = node.after as usize;
                return Some(c);
            }
            c = node.after as usize;
        }
        None
    }

    /// When the text at `pos` is, byte for byte, the guide's from `from` to
    /// the end of its node `g` (the value, or the member from its key's
    /// quote): the nodes of `g`'s subtree, moved to where that text is here,
    /// and true. Reading the same bytes at the same depth makes the same
    /// nodes, so nothing is read but the bytes compared. A number or a
    /// literal must end where `g`'s did (`1` is not the start of `12`); a
    /// string, an object or a list ends with its own last byte.
    fn same_as_guide(&mut self, g: usize, from: usize) -> bool {
        let node = self.guide.nodes[g];
        let text = &self.guide.text[from..node.end as usize];
        let rest = &self.bytes[self.pos..];
        if !rest.starts_with(text) {
            return false;
        }
        if node.kind == Kind::Scalar
            && !text.ends_with(b"\"")
            && !matches!(
                rest.get(text.len()),
                None | Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            )
        {
            return false;
        }
        let by = (self.pos as u32).wrapping_sub(from as u32);
        let moved = (self.nodes.len() as u32).wrapping_sub(g as u32);
        self.nodes.extend(
            self.guide.nodes[g..node.after as usize]
                .iter()
                .map(|n| Node {
                    start: n.start.wrapping_add(by),
                    end: n.end.wrapping_add(by),
                    after: n.after.wrapping_add(moved),
                    key: (n.key.0.wrapping_add(by), n.key.1.wrapping_add(by)),
                    escaped: n.escaped,
                    kind: n.kind,
                }),
        );
        self.copied += node.after as usize - g;
        self.pos += text.len();
        true
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<Kind, TapeError> {
        if !self.bytes[self.pos..].starts_with(word) {
            return Err(self.error("expected a value"));
        }
        self.pos += word.len();
        Ok(Kind::Scalar)
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - from
    }

    fn number(&mut self) -> Result<Kind, TapeError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        Ok(Kind::Scalar)
    }

    /// A string at `pos` (its opening quote): where its text starts and ends
    /// inside the quotes, and whether it has escapes. Inlined: returned
    /// through memory, its answer cost a stall at every key.
    #[inline(always)]
    fn string(&mut self) -> Result<(usize, usize, bool), TapeError> {
        self.expect(b'"', "expected a string")?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            let Some(i) = special(&self.bytes[self.pos..]) else {
                self.pos = self.bytes.len();
                return Err(self.error("unterminated string"));
            };
            self.pos += i;
            match self.bytes[self.pos] {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    return Ok((start, end, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    self.escape()?;
                }
                _ => return Err(self.error("control character in a string")),
            }
        }
    }

    /// The escape after a backslash; a `\u` escape of a surrogate must be one
    /// of a pair, as serde_json requires.
    fn escape(&mut self) -> Result<(), TapeError> {
        match self.peek() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.pos += 1;
                Ok(())
            }
            Some(b'u') => {
                self.pos += 1;
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A lead surrogate: a trail one must follow.
                        if !self.bytes[self.pos..].starts_with(b"\\u") {
                            return Err(self.error("lone leading surrogate in hex escape"));
                        }
                        self.pos += 2;
                        if !(0xDC00..=0xDFFF).contains(&self.hex4()?) {
                            return Err(self.error("lone leading surrogate in hex escape"));
                        }
                        Ok(())
                    }
                    0xDC00..=0xDFFF => Err(self.error("lone trailing surrogate in hex escape")),
                    _ => Ok(()),
                }
            }
            _ => Err(self.error("invalid escape")),
        }
    }

    fn hex4(&mut self) -> Result<u32, TapeError> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.error("invalid escape"))?;
        let mut unit = 0;
        for &d in digits {
            let v = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.error("invalid escape"))?;
            unit = unit * 16 + v;
        }
        self.pos += 4;
        Ok(unit)
    }
}

/// Where the first byte that ends a string's plain run is: a quote, a
/// backslash or a control character. Eight bytes at a time: most strings of an
/// object are longer than a word, and this is most of the reading.
fn special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // The high bit of each byte of `x` under `n` (exact up to the first such
    // byte, which is all that is read).
    let under = |x: u64, n: u8| x.wrapping_sub(ONES * n as u64) & !x & HIGH;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let found = under(x ^ (ONES * b'"' as u64), 1)
            | under(x ^ (ONES * b'\\' as u64), 1)
            | under(x, 0x20);
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = chunks.remainder();
    rest.iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use serde_json::value::RawValue;

    /// What serde_json reads of `raw` one level down, as (key, text) pairs or items.
    fn serde_members(text: &str) -> Option<Vec<(String, String)>> {
        let map: Vec<(String, &RawValue)> = {
            let v: Value = serde_json::from_str(text).ok()?;
            if !v.is_object() {
                return None;
            }
            // Document order and duplicates: read as a sequence of entries.
            struct Entries<'a>(Vec<(String, &'a RawValue)>);
            impl<'de> serde::Deserialize<'de> for Entries<'de> {
                fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    struct V;
                    impl<'de> serde::de::Visitor<'de> for V {
                        type Value = Entries<'de>;
                        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                            f.write_str("an object")
                        }
                        fn visit_map<A: serde::de::MapAccess<'de>>(
                            self,
                            mut m: A,
                        ) -> Result<Entries<'de>, A::Error> {
                            let mut out = Vec::new();
                            while let Some(e) = m.next_entry::<String, &'de RawValue>()? {
                                out.push(e);
                            }
                            Ok(Entries(out))
                        }
                    }
                    d.deserialize_map(V)
                }
            }
            serde_json::from_str::<Entries>(text).ok()?.0
        };
        Some(
            map.into_iter()
                .map(|(k, v)| (k, v.get().to_string()))
                .collect(),
        )
    }

    fn tape_members(raw: Raw<'_>) -> Option<Vec<(String, String)>> {
        raw.members().map(|m| {
            m.into_iter()
                .map(|(k, v)| (k.into_owned(), v.get().to_string()))
                .collect()
        })
    }

    /// The tape and serde_json agree on every object and list of `text`,
    /// recursively.
    fn agree(raw: Raw<'_>) {
        assert_eq!(tape_members(raw), serde_members(raw.get()), "{}", raw.get());
        let serde_items: Option<Vec<String>> = serde_json::from_str::<Vec<&RawValue>>(raw.get())
            .ok()
            .map(|items| items.iter().map(|i| i.get().to_string()).collect());
        let items: Option<Vec<String>> = raw
            .items()
            .map(|items| items.iter().map(|i| i.get().to_string()).collect());
        assert_eq!(items, serde_items, "{}", raw.get());
        for child in raw.children() {
            agree(child);
        }
    }

    #[test]
    fn the_first_byte_that_ends_a_plain_run_is_found_at_every_place() {
        for len in 0..20 {
            for at in 0..=len {
                for b in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut bytes = vec![b'a'; len];
                    // Bytes just above the ones sought, and above 0x7f, never stop it.
                    for (i, x) in bytes.iter_mut().enumerate() {
                        *x = [b'a', 0x20, b'#', b']', 0xc3, 0x80][i % 6];
                    }
                    let expected = (at < len).then_some(at);
                    if at < len {
                        bytes[at] = b;
                    }
                    assert_eq!(special(&bytes), expected, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn a_deployment_reads_as_serde_json_reads_it() {
        let shop = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/shop/online-boutique.json"
        ));
        let tape = Tape::new(shop).unwrap();
        agree(tape.root());
        assert_eq!(tape.root().get(), shop.trim());
    }

    #[test]
    fn spans_keys_and_escapes() {
        let text = r#" {"a" : [1, -2.5e+3, true, null, {}], "b\"c": "x\u00e9\ud83d\ude00", "a": {"d": []} } "#;
        let tape = Tape::new(text).unwrap();
        agree(tape.root());
        let members = tape.root().members().unwrap();
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["a", "b\"c", "a"]);
        assert!(matches!(members[0].0, Cow::Borrowed(_)));
        assert!(matches!(members[1].0, Cow::Owned(_)));
        assert_eq!(members[0].1.get(), "[1, -2.5e+3, true, null, {}]");
        assert_eq!(members[1].1.get(), r#""x\u00e9\ud83d\ude00""#);
        assert_eq!(members[2].1.get(), r#"{"d": []}"#);
        // One member by its name: the last of several, escapes decoded.
        let root = tape.root();
        assert_eq!(root.member("a").map(|m| m.get()), Some(r#"{"d": []}"#));
        let escaped = root.member("b\"c").unwrap();
        assert_eq!(escaped.as_str().as_deref(), Some("x\u{e9}\u{1f600}"));
        assert!(matches!(escaped.as_str(), Some(Cow::Owned(_))));
        assert!(root.member("d").is_none() && members[0].1.member("a").is_none());
        assert!(members[0].1.as_str().is_none() && root.as_str().is_none());
        let items = members[0].1.items().unwrap();
        assert_eq!(items.len(), 5);
        assert!(items[4].is_object() && !items[4].is_array());
        assert!(members[0].1.members().is_none() && items[0].items().is_none());
    }

    #[test]
    fn what_serde_json_refuses_the_tape_refuses() {
        let bad = [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "[01]",
            "[1.]",
            "[1e]",
            "[-]",
            "[.5]",
            "[+1]",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"a\tb\"",
            "[tru]",
            "[nul]",
            "{} {}",
            "[1] x",
            "[1 2]",
            "{\"a\":1 \"b\":2}",
        ];
        for text in bad {
            assert!(
                serde_json::from_str::<Value>(text).is_err(),
                "serde: {text:?}"
            );
            assert!(Tape::new(text).is_err(), "tape: {text:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(Tape::new(&deep).is_err());
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(serde_json::from_str::<Value>(&fine).is_ok());
        assert!(Tape::new(&fine).is_ok());
    }

    /// `after` read with the tape of `guide` is what it is read alone: the
    /// same nodes, or the same error. How many nodes were the guide's.
    fn guided(after: &str, guide: &str) -> usize {
        let guide = Tape::new(guide).unwrap();
        match (Tape::new(after), Tape::scan(after, Some(&guide))) {
            (Ok(alone), Ok((with, copied))) => {
                assert_eq!(alone.nodes, with.nodes, "{after:?} after {:?}", guide.text);
                copied
            }
            (Err(alone), Err(with)) => {
                assert_eq!(alone, with, "{after:?} after {:?}", guide.text);
                0
            }
            (alone, with) => panic!(
                "{after:?} after {:?}: alone {:?}, guided {:?}",
                guide.text,
                alone.err(),
                with.err()
            ),
        }
    }

    #[test]
    fn a_tape_read_with_a_guide_is_the_tape_read_alone() {
        let same = r#"{"a": [1, 2, {"b": "c"}], "d": true, "e": null}"#;
        assert_eq!(guided(same, same), Tape::new(same).unwrap().nodes.len());
        // Only what is byte for byte the guide's is taken from it.
        let cases = [
            // A number or a literal that goes on is not the guide's.
            ("[12]", "[123]", 0),
            ("[1]", "[1.5]", 0),
            ("[1]", "[1e5]", 0),
            ("[1]", "[1, 2]", 1),
            ("[true]", "[truex]", 0),
            ("[true]", "[true ]", 1),
            ("[null]", "[nullnull]", 0),
            // Strings end with their quote.
            (r#"["a"]"#, r#"["a","b"]"#, 1),
            (r#"["a\"b"]"#, r#"["a\"b\""]"#, 0),
            // Members out of order, twice, with escapes, of another kind.
            (r#"{"a":1,"b":[2]}"#, r#"{"b":[2],"a":1}"#, 2),
            (r#"{"a":1,"a":2}"#, r#"{"a":1,"a":3}"#, 1),
            (r#"{"a\u0062":1}"#, r#"{"ab":1}"#, 0),
            (r#"{"a\u0062":1}"#, r#"{"a\u0062":1,"c":2}"#, 1),
            (r#"{"k":{"x":1}}"#, r#"{"k":[{"x":1}]}"#, 0),
            (r#"{"k":[{"x":1}]}"#, r#"{"k":{"x":1}}"#, 0),
            // Errors after and inside what the guide has (an error copies
            // nothing, as it makes no tape).
            (r#"{"k":"x"}"#, r#"{"k":"x""#, 0),
            (r#"{"k":"x"}"#, r#"{"k":"x"} x"#, 0),
            (r#"{"k":[1,2]}"#, r#"{"k":[1,2,]}"#, 0),
            ("[1]", " [1] ", 2),
        ];
        for (guide, after, copied) in cases {
            assert_eq!(guided(after, guide), copied, "{after:?} after {guide:?}");
        }
        // Depth counts as read alone: the guide's values one level deeper.
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        let deep = format!("[{fine}]");
        assert_eq!(guided(&deep, &fine), 0);
        assert!(Tape::new(&deep).is_err());
        let wrapped = "[".repeat(MAX_DEPTH - 1) + "[1]" + &"]".repeat(MAX_DEPTH - 1);
        guided(&wrapped, &fine);
        // A Deployment whose image changed: all but the path to it is copied.
        let shop = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/shop/online-boutique.json"
        ));
        let changed = shop.replacen("adservice:v0.10.", "adservice:v0.11.", 1);
        assert_ne!(changed, shop);
        let nodes = Tape::new(shop).unwrap().nodes.len();
        let copied = guided(&changed, shop);
        assert!(copied > nodes * 9 / 10, "{copied} of {nodes} nodes copied");
    }

    /// Any JSON, strings with every kind of character (escapes included).
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The JSON pointer of every value in `v`, `v`'s own first.
    fn pointers_of(v: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    pointers_of(v, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    pointers_of(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    fn unescape_pointer(token: &str) -> String {
        token.replace("~1", "/").replace("~0", "~")
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Any JSON text serde_json writes, pretty or not, reads the same
        /// through the tape.
        #[test]
        fn any_value_reads_as_serde_json_reads_it(
            v in any_json(),
            pretty in proptest::bool::ANY,
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                v.to_string()
            };
            let tape = Tape::new(&text).unwrap();
            agree(tape.root());
        }

        /// A value changed anywhere (replaced, or a member removed), read
        /// with the original's tape as a guide: the tape read alone.
        #[test]
        fn a_changed_document_reads_the_same_with_a_guide(
            v in any_json(),
            by in any_json(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            remove in proptest::bool::ANY,
            pretty in proptest::bool::ANY,
        ) {
            let mut changed = v.clone();
            let mut pointers = Vec::new();
            pointers_of(&v, String::new(), &mut pointers);
            let pointer = at.get(&pointers);
            let parent = pointer.rfind('/').map(|i| &pointer[..i]);
            let removed = remove
                && parent.and_then(|p| changed.pointer_mut(p)).is_some_and(|p| {
                    let key = unescape_pointer(&pointer[pointer.rfind('/').unwrap_or(0) + 1..]);
                    match p {
                        Value::Object(m) => m.shift_remove(&key).is_some(),
                        _ => false,
                    }
                });
            if !removed && let Some(slot) = changed.pointer_mut(pointer) {
                *slot = by;
            }
            let text = |v: &Value| if pretty {
                serde_json::to_string_pretty(v).unwrap()
            } else {
                v.to_string()
            };
            guided(&text(&changed), &text(&v));
            guided(&text(&v), &text(&changed));
        }

        /// Bytes of a document replaced with JSON's punctuation, numbers and
        /// words, read with the original's tape as a guide: the tape read
        /// alone, or the same error.
        #[test]
        fn an_edited_text_reads_the_same_with_a_guide(
            v in any_json(),
            edits in proptest::collection::vec((0usize..400, 0usize..4, 0usize..16), 1..4),
        ) {
            const BITS: [&str; 16] = [
                "", "1", "12", ".5", "e5", "-", "\"", "\\", "true", "null", "{}", "[]",
                ",", ":", " ", "{\"a\":[1]}",
            ];
            let text = v.to_string();
            let mut edited = text.clone();
            for (at, len, bit) in edits {
                let mut from = at.min(edited.len());
                while !edited.is_char_boundary(from) {
                    from -= 1;
                }
                let mut to = (from + len).min(edited.len());
                while !edited.is_char_boundary(to) {
                    to += 1;
                }
                edited.replace_range(from..to, BITS[bit]);
            }
            guided(&edited, &text);
        }

        /// Cut anywhere, a document is accepted by the tape exactly when
        /// serde_json accepts it.
        #[test]
        fn a_cut_document_is_refused_as_serde_json_refuses_it(
            v in any_json(),
            cut in 0usize..400,
        ) {
            let text = v.to_string();
            let mut at = cut.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let part = &text[..at];
            proptest::prop_assert_eq!(
                Tape::new(part).is_ok(),
                serde_json::from_str::<Value>(part).is_ok(),
                "{:?}", part
            );
        }
    }
}
