//! A thread's messages as a tree: each message follows its parent, alternatives share
//! one. Built from the storage's links (ids, parents, roles, times — no bodies), so
//! finding the active branch of a long thread reads a few bytes per message.

use std::collections::HashMap;

use art_types::{BranchPoint, ConversationMessage, MessageRole};

use crate::storage::Link;

/// The tree of one thread's messages.
pub struct Tree {
    /// Oldest first.
    links: Vec<Link>,
    /// Position in `links` by id.
    index: HashMap<String, usize>,
    /// Children of each message (roots under `None`), oldest first.
    children: HashMap<Option<usize>, Vec<usize>>,
}

impl Tree {
    /// The tree of `links` (oldest first, as [`crate::storage::StorageAdapter::links`]
    /// gives them). A parent that is not among them makes its child a root.
    pub fn new(links: Vec<Link>) -> Self {
        let index: HashMap<String, usize> = links
            .iter()
            .enumerate()
            .map(|(i, l)| (l.id.clone(), i))
            .collect();
        let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
        for (i, link) in links.iter().enumerate() {
            let parent = link.parent.as_ref().and_then(|p| index.get(p)).copied();
            // A parent later than its child cannot be (a damaged file): a root then,
            // so no walk can loop.
            let parent = parent.filter(|&p| p < i);
            children.entry(parent).or_default().push(i);
        }
        Self {
            links,
            index,
            children,
        }
    }

    /// The tree of `messages` (any order; ties in time keep their order).
    pub fn of(messages: &[ConversationMessage]) -> Self {
        let mut links: Vec<Link> = messages
            .iter()
            .map(|m| Link {
                id: m.message_id.clone(),
                parent: m.parent_id.clone(),
                kind: Some(m.role.as_str().to_owned()),
                timestamp: m.timestamp,
            })
            .collect();
        links.sort_by_key(|l| l.timestamp);
        Self::new(links)
    }

    /// The head a thread shows: `head` when it is one of its messages, else (a branch
    /// about to start at the first message, a file that held part of a thread) the
    /// newest message.
    pub fn shown_head<'a>(&'a self, head: Option<&'a str>) -> Option<&'a str> {
        head.filter(|h| self.contains(h)).or_else(|| self.newest())
    }

    /// How many messages are at or below `id`.
    pub fn size_below(&self, id: &str) -> usize {
        let Some(&i) = self.index.get(id) else {
            return 0;
        };
        let mut stack = vec![i];
        let mut size = 0;
        while let Some(i) = stack.pop() {
            size += 1;
            if let Some(kids) = self.children.get(&Some(i)) {
                stack.extend(kids);
            }
        }
        size
    }

    /// Whether the thread has no messages.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Whether `id` is one of the thread's messages.
    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        let parent = self.links[i].parent.as_ref()?;
        self.index.get(parent).copied().filter(|&p| p < i)
    }

    /// The message `id` follows, if any.
    pub fn parent(&self, id: &str) -> Option<&str> {
        let i = *self.index.get(id)?;
        self.parent_of(i).map(|p| self.links[p].id.as_str())
    }

    /// The branch ending at `head`, from the thread's first message: empty when `head`
    /// is `None` or not a message of the thread.
    pub fn path(&self, head: Option<&str>) -> Vec<&Link> {
        let mut at = head.and_then(|h| self.index.get(h)).copied();
        let mut path = Vec::new();
        while let Some(i) = at {
            path.push(&self.links[i]);
            at = self.parent_of(i);
        }
        path.reverse();
        path
    }

    /// The newest message at or below `id` — the end of the branch there that was added
    /// to last (a child is always newer than its parent, so it is a leaf).
    pub fn newest_below(&self, id: &str) -> Option<&str> {
        let mut stack = vec![*self.index.get(id)?];
        let mut newest = stack[0];
        while let Some(i) = stack.pop() {
            let key = |j: usize| (self.links[j].timestamp, j);
            if key(i) > key(newest) {
                newest = i;
            }
            if let Some(kids) = self.children.get(&Some(i)) {
                stack.extend(kids);
            }
        }
        Some(&self.links[newest].id)
    }

    /// The newest message of the thread, if any.
    pub fn newest(&self) -> Option<&str> {
        let i = (0..self.links.len()).max_by_key(|&i| (self.links[i].timestamp, i))?;
        Some(&self.links[i].id)
    }

    /// Every place with two or more alternatives, in the order their first alternative
    /// was added.
    pub fn branch_points(&self) -> Vec<BranchPoint> {
        let mut points: Vec<(usize, BranchPoint)> = self
            .children
            .iter()
            .filter(|(_, kids)| kids.len() > 1)
            .map(|(parent, kids)| {
                let point = BranchPoint {
                    parent_id: parent.map(|p| self.links[p].id.clone()),
                    alternatives: kids.iter().map(|&k| self.links[k].id.clone()).collect(),
                };
                (kids[0], point)
            })
            .collect();
        points.sort_by_key(|(first, _)| *first);
        points.into_iter().map(|(_, p)| p).collect()
    }

    /// The last message with `role` on the branch ending at `head`.
    pub fn last_on_path(&self, head: Option<&str>, role: MessageRole) -> Option<&str> {
        self.path(head)
            .into_iter()
            .rev()
            .find(|l| l.kind.as_deref() == Some(role.as_str()))
            .map(|l| l.id.as_str())
    }

    /// The nearest ancestor of `id` (itself excluded) that `keep` accepts.
    pub fn nearest_ancestor(&self, id: &str, keep: impl Fn(&str) -> bool) -> Option<&str> {
        let mut at = self.index.get(id).and_then(|&i| self.parent_of(i));
        while let Some(i) = at {
            if keep(&self.links[i].id) {
                return Some(&self.links[i].id);
            }
            at = self.parent_of(i);
        }
        None
    }

    /// The messages whose parent is `id`, oldest first.
    pub fn children(&self, id: &str) -> Vec<&str> {
        let Some(&i) = self.index.get(id) else {
            return Vec::new();
        };
        self.children
            .get(&Some(i))
            .map(|kids| kids.iter().map(|&k| self.links[k].id.as_str()).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(id: &str, parent: Option<&str>, kind: &str, ts: i64) -> Link {
        Link {
            id: id.into(),
            parent: parent.map(Into::into),
            kind: Some(kind.into()),
            timestamp: ts,
        }
    }

    /// q1 → a1 → q2 → a2, q2 edited as q2b → a2b, and q2b's answer regenerated
    /// (a new question q2c beside it): three alternatives after a1.
    fn thread() -> Tree {
        Tree::new(vec![
            link("q1", None, "USER", 1),
            link("a1", Some("q1"), "AI", 2),
            link("q2", Some("a1"), "USER", 3),
            link("a2", Some("q2"), "AI", 4),
            link("q2b", Some("a1"), "USER", 5),
            link("a2b", Some("q2b"), "AI", 6),
            link("q2c", Some("a1"), "USER", 7),
            link("a2c", Some("q2c"), "AI", 8),
        ])
    }

    fn ids<'a>(path: &[&'a Link]) -> Vec<&'a str> {
        path.iter().map(|l| l.id.as_str()).collect()
    }

    #[test]
    fn the_path_follows_parents_from_the_first_message_to_the_head() {
        let tree = thread();
        assert_eq!(ids(&tree.path(Some("a2b"))), ["q1", "a1", "q2b", "a2b"]);
        assert_eq!(ids(&tree.path(Some("a2"))), ["q1", "a1", "q2", "a2"]);
        assert!(tree.path(None).is_empty());
        assert!(tree.path(Some("gone")).is_empty());
        assert_eq!(tree.last_on_path(Some("a2"), MessageRole::User), Some("q2"));
        assert_eq!(tree.parent("q2b"), Some("a1"));
        assert_eq!(tree.children("a1"), ["q2", "q2b", "q2c"]);
    }

    #[test]
    fn branch_points_list_alternatives_oldest_first() {
        let points = thread().branch_points();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].parent_id.as_deref(), Some("a1"));
        assert_eq!(points[0].alternatives, ["q2", "q2b", "q2c"]);
        assert_eq!(points[0].position("q2b"), Some((1, 3)));
        // Two first questions: the alternatives have no parent.
        let roots = Tree::new(vec![link("x", None, "USER", 1), link("y", None, "USER", 2)]);
        assert_eq!(roots.branch_points()[0].parent_id, None);
    }

    #[test]
    fn switching_goes_to_the_newest_end_below_a_message() {
        let tree = thread();
        assert_eq!(tree.newest_below("q2"), Some("a2"));
        assert_eq!(tree.newest_below("a1"), Some("a2c"));
        assert_eq!(tree.newest_below("a2b"), Some("a2b"));
        assert_eq!(tree.newest(), Some("a2c"));
        assert_eq!(tree.newest_below("gone"), None);
    }

    #[test]
    fn damaged_links_make_roots_instead_of_loops() {
        // a names b as parent and b names a: b is later, so a is a root.
        let tree = Tree::new(vec![
            link("a", Some("b"), "USER", 1),
            link("b", Some("a"), "AI", 2),
            link("c", Some("missing"), "USER", 3),
        ]);
        assert_eq!(ids(&tree.path(Some("b"))), ["a", "b"]);
        assert_eq!(ids(&tree.path(Some("c"))), ["c"]);
        assert_eq!(
            tree.nearest_ancestor("b", |id| id != "zzz"),
            Some("a"),
            "stops at the root"
        );
    }
}
