//! An index of the names of a list of fields, kept once the list is long enough that a scan
//! costs more than a hash: finding a field then costs the same however many there are, so a
//! measurement of many fields (or many measurements with fields of their own) is placed and
//! committed in time linear in its fields.

use std::collections::HashMap;

/// Names a list holds before it is indexed; shorter lists are scanned.
const INDEX_FROM: usize = 16;

/// The position of each name of a list, once it holds [`INDEX_FROM`] names or more (empty
/// before). The list's owner reports every name it appends ([`NameIndex::pushed`]) and
/// never renames or removes one but by clearing both ([`NameIndex::clear`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NameIndex(HashMap<String, usize>);

impl NameIndex {
    /// Position of the item named `name` in `list` (`name_of` gives an item's name).
    pub(crate) fn position<T>(
        &self,
        list: &[T],
        name_of: impl Fn(&T) -> &str,
        name: &str,
    ) -> Option<usize> {
        if self.0.is_empty() {
            list.iter().position(|item| name_of(item) == name)
        } else {
            self.0.get(name).copied()
        }
    }

    /// Notes that `list` had its last item appended (`name_of` gives an item's name).
    pub(crate) fn pushed<T>(&mut self, list: &[T], name_of: impl Fn(&T) -> &str) {
        if !self.0.is_empty() {
            if let Some(last) = list.last() {
                self.0.insert(name_of(last).to_owned(), list.len() - 1);
            }
        } else if list.len() >= INDEX_FROM {
            self.0 = list
                .iter()
                .enumerate()
                .map(|(i, item)| (name_of(item).to_owned(), i))
                .collect();
        }
    }

    /// Bytes the index holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.0.keys().map(|k| 40 + k.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_names_before_and_after_indexing() {
        let mut list: Vec<String> = Vec::new();
        let mut index = NameIndex::default();
        for i in 0..100 {
            let name = format!("f{i}");
            assert_eq!(index.position(&list, String::as_str, &name), None);
            list.push(name);
            index.pushed(&list, String::as_str);
            for (j, n) in list.iter().enumerate() {
                assert_eq!(index.position(&list, String::as_str, n), Some(j));
            }
        }
        assert!(index.heap_bytes() > 0);
    }
}
