//! Reading a profile from its file, checked.

use super::{DeviceProfile, InvalidProfile};

/// Largest profile file read (a profile is a few KiB).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// Why a profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read device profile {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("device profile {path} is larger than {MAX_PROFILE_BYTES} bytes")]
    TooLarge { path: String },
    #[error("device profile {path}:{line}:{column}: {message}")]
    Parse { path: String, line: usize, column: usize, message: String },
    #[error("device profile {path}: {reason}")]
    Invalid { path: String, reason: InvalidProfile },
}

impl DeviceProfile {
    /// The profile in the file at `path`, checked.
    pub fn load(path: &str) -> Result<DeviceProfile, ProfileError> {
        use std::io::Read as _;
        if path.is_empty() {
            let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path is empty (profile=PATH)");
            return Err(ProfileError::Read { path: "''".into(), source });
        }
        let file = std::fs::File::open(path).map_err(|source| ProfileError::Read { path: path.into(), source })?;
        let mut text = String::new();
        file.take(MAX_PROFILE_BYTES + 1).read_to_string(&mut text).map_err(|source| ProfileError::Read { path: path.into(), source })?;
        if text.len() as u64 > MAX_PROFILE_BYTES {
            return Err(ProfileError::TooLarge { path: path.into() });
        }
        // A leading byte-order mark (editors on Windows write one) is read
        // past, as every graph reader does; serde_json would refuse it.
        let json = text.strip_prefix('\u{feff}').unwrap_or(&text);
        // serde reads a struct from a list of its fields in order too; a
        // profile is an object, with its fields named.
        let first = json.trim_start();
        if !first.starts_with('{') && !first.is_empty() {
            let at = crate::diag::loc_of_offset(json.as_bytes(), json.len() - first.len());
            let (line, column) = (at.line as usize, at.col as usize);
            return Err(ProfileError::Parse { path: path.into(), line, column, message: "a device profile is a JSON object (`{…}`)".into() });
        }
        let profile: DeviceProfile = serde_json::from_str(json).map_err(|e| {
            // The location is said once, before the message.
            let message = e.to_string();
            let message = message.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&message).to_string();
            ProfileError::Parse { path: path.into(), line: e.line(), column: e.column(), message }
        })?;
        profile.check().map_err(|reason| ProfileError::Invalid { path: path.into(), reason })?;
        Ok(profile)
    }
}
