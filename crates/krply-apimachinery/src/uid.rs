//! UIDs and auditIDs as kube-apiserver writes them.

/// 16 bytes written as a UUID, `8-4-4-4-12` lowercase hex digits, as
/// kube-apiserver writes auditIDs and uids.
pub fn uuid_text(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn eight_four_four_four_twelve() {
        let b: [u8; 16] = std::array::from_fn(|i| u8::try_from(i * 17).unwrap_or(0));
        assert_eq!(super::uuid_text(&b), "00112233-4455-6677-8899-aabbccddeeff");
    }
}
