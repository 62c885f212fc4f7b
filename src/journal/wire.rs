//! The small binary layouts the journal packs rows into (audit packs,
//! cold blocks): LEB128 varints of at most ten bytes, zigzag for signed
//! steps, text as a varint length and its bytes, and resourceVersions as
//! integers when they are plain decimal.
//!
//! A reader of these layouts reads rows of a file that may be damaged: every
//! read is bounded by the bytes there are, and a layout that does not hold is
//! a [`Damaged`] error, never a panic.

/// A layout that does not hold: what was being read when it broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damaged(pub &'static str);

/// A signed step as an unsigned number small for small steps either way.
pub fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// The step [`zigzag`] made `n` of.
pub fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    // Bounded: ten bytes at most.
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub fn put_text(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// Reads a layout front to back.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, at: 0 }
    }

    pub fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    pub fn byte(&mut self) -> Result<u8, Damaged> {
        let b = *self.data.get(self.at).ok_or(Damaged("cut short"))?;
        self.at += 1;
        Ok(b)
    }

    pub fn bytes(&mut self, n: u64) -> Result<&'a [u8], Damaged> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|end| *end <= self.data.len())
            .ok_or(Damaged("cut short"))?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub fn varint(&mut self) -> Result<u64, Damaged> {
        let mut n = 0u64;
        // Bounded: ten bytes at most.
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(Damaged("varint too long"))
    }

    pub fn text(&mut self) -> Result<String, Damaged> {
        let n = self.varint()?;
        self.text_of(n)
    }

    pub fn text_of(&mut self, n: u64) -> Result<String, Damaged> {
        let bytes = self.bytes(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Damaged("text is not UTF-8"))
    }
}

/// A resourceVersion as stored: an integer when it is plain decimal (as
/// etcd's are), else its text, so that it reads back as it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rv {
    Int(i64),
    Text(String),
}

impl Rv {
    pub fn parse(rv: &str) -> Rv {
        let plain = !rv.is_empty()
            && rv.bytes().all(|b| b.is_ascii_digit())
            && (rv == "0" || !rv.starts_with('0'));
        match rv.parse::<i64>() {
            Ok(n) if plain => Rv::Int(n),
            _ => Rv::Text(rv.to_string()),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Rv::Int(n) => n.to_string(),
            Rv::Text(t) => t.clone(),
        }
    }

    /// Calls `f` with its text, written without an allocation.
    pub fn with_text<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        match self {
            Rv::Int(n) => f(itoa::Buffer::new().format(*n)),
            Rv::Text(t) => f(t),
        }
    }

    /// Its text, taken out.
    pub fn into_text(self) -> String {
        match self {
            Rv::Int(n) => n.to_string(),
            Rv::Text(t) => t,
        }
    }

    /// Whether its text is `text`.
    pub fn is(&self, text: &str) -> bool {
        self.with_text(|t| t == text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_and_steps_read_back(steps in prop::collection::vec(any::<i64>(), 0..50)) {
            let mut out = Vec::new();
            for s in &steps {
                put_varint(&mut out, zigzag(*s));
            }
            let mut r = Reader::new(&out);
            for s in &steps {
                prop_assert_eq!(unzigzag(r.varint().unwrap()), *s);
            }
            prop_assert!(r.done());
        }

        #[test]
        fn resource_versions_read_back_as_written(rv in "[0-9]{0,22}|[ -~]{0,12}") {
            prop_assert_eq!(Rv::parse(&rv).text(), rv);
        }
    }

    #[test]
    fn a_reader_past_its_bytes_is_an_error() {
        let mut r = Reader::new(&[0x80, 0x80]);
        assert_eq!(r.varint(), Err(Damaged("cut short")));
        let mut r = Reader::new(&[0xff; 11]);
        assert_eq!(r.varint(), Err(Damaged("varint too long")));
        let mut r = Reader::new(&[3, b'a']);
        assert_eq!(r.text(), Err(Damaged("cut short")));
        let mut r = Reader::new(&[1, 0xff]);
        assert_eq!(r.text(), Err(Damaged("text is not UTF-8")));
        assert_eq!(Reader::new(&[]).bytes(u64::MAX), Err(Damaged("cut short")));
    }

    #[test]
    fn only_plain_decimal_is_an_integer() {
        assert_eq!(Rv::parse("12"), Rv::Int(12));
        assert_eq!(Rv::parse("0"), Rv::Int(0));
        for text in ["012", "", "-1", "+1", "99999999999999999999", "1a"] {
            assert_eq!(Rv::parse(text), Rv::Text(text.to_string()), "{text}");
        }
    }
}
