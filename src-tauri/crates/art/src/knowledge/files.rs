//! Which files a path added to a collection stands for: the file itself, or every file
//! under a folder. Hidden entries are left out (`.git`, editor droppings), and so are
//! symbolic links (a link may loop back to a folder above it); an unreadable folder
//! inside is left out with its reason rather than failing the whole add.

use std::path::{Path, PathBuf};

/// The files found, and what was left out and why.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Files, folders' contents sorted by name.
    pub files: Vec<PathBuf>,
    /// `path: reason` for each entry left out.
    pub left_out: Vec<String>,
}

/// The files at or under `path`; an error only when `path` itself cannot be read.
pub fn find(path: &Path) -> std::io::Result<Found> {
    let mut found = Found::default();
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        walk(path, &mut found)?;
    } else if meta.is_file() {
        found.files.push(absolute(path));
    } else {
        found
            .left_out
            .push(format!("{}: a link or special file", path.display()));
    }
    Ok(found)
}

fn walk(dir: &Path, found: &mut Found) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        // `file_type` does not follow links: a link is neither a file nor a folder here.
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => {
                if let Err(e) = walk(&path, found) {
                    found.left_out.push(format!("{}: {e}", path.display()));
                }
            }
            Ok(kind) if kind.is_file() => found.files.push(absolute(&path)),
            Ok(kind) if kind.is_symlink() => found.left_out.push(format!(
                "{}: a symbolic link (links are not followed)",
                path.display()
            )),
            Ok(_) => {}
            Err(e) => found.left_out.push(format!("{}: {e}", path.display())),
        }
    }
    Ok(())
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A path's file name, for display.
pub fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gives_its_files_sorted_without_hidden_ones_or_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/deep")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for file in ["z.md", "a.txt", "b/deep/c.pdf", ".hidden", ".git/config"] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(root, root.join("b/loop")).unwrap();

        let found = find(root).unwrap();
        let names: Vec<_> = found
            .files
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt", "b/deep/c.pdf", "z.md"]);
        #[cfg(unix)]
        assert!(
            found.left_out.len() == 1 && found.left_out[0].contains("symbolic link"),
            "{:?}",
            found.left_out
        );
    }

    #[test]
    fn a_single_file_is_itself_and_a_missing_path_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("only.txt");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(find(&file).unwrap().files, [file]);
        assert!(find(&dir.path().join("missing")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_folder_inside_is_left_out_with_its_reason() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::write(locked.join("secret.txt"), "x").unwrap();
        std::fs::write(dir.path().join("open.txt"), "x").unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let found = find(dir.path());
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = found.unwrap();
        // Root reads any folder: then the file inside is simply found.
        if found.files.len() == 1 {
            assert!(found.left_out[0].contains("locked"), "{:?}", found.left_out);
        } else {
            assert_eq!(found.files.len(), 2);
        }
    }
}
