use proptest::prelude::*;

use super::*;

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

#[test]
fn a_vector_survives_its_blob_and_a_wrong_length_is_refused() {
    let v = vec![0.25, -1.5, 3.0];
    assert_eq!(from_blob(&to_blob(&v), 3), Some(v.clone()));
    assert_eq!(from_blob(&to_blob(&v), 4), None);
    let mut set = VectorSet::new(3);
    assert!(set.push_blob(7, &to_blob(&v)));
    assert!(!set.push_blob(8, &[0; 5]));
    assert!(!set.push(9, &[1.0]));
    assert_eq!(set.len(), 1);
}

#[test]
fn nearest_ranks_by_cosine_and_keeps_k() {
    let mut set = VectorSet::new(10);
    for id in 0..100 {
        let v: Vec<f32> = (0..10)
            .map(|d| ((id * 7 + d * 3) % 11) as f32 - 5.0)
            .collect();
        set.push(id, &unit(&v));
    }
    let query = unit(
        &(0..10)
            .map(|d| ((42 * 7 + d * 3) % 11) as f32 - 5.0)
            .collect::<Vec<_>>(),
    );
    let found = set.nearest(&query, 5);
    assert_eq!(found.len(), 5);
    assert!((found[0].1 - 1.0).abs() < 1e-5, "itself first: {found:?}");
    assert!(found.windows(2).all(|w| w[0].1 >= w[1].1));
    assert!(set.nearest(&query[..9], 5).is_empty());
    assert_eq!(set.nearest(&query, 1000).len(), 100);
}

proptest! {
    /// The eight-lane sum is the plain dot product, for any length.
    #[test]
    fn the_lanes_add_up(a in prop::collection::vec(-1.0f32..1.0, 0..40)) {
        let b: Vec<f32> = a.iter().rev().copied().collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        prop_assert!((dot(&a, &b) - plain).abs() < 1e-4);
    }
}

#[test]
fn fusion_favours_what_both_lists_found() {
    let words = [1, 2, 3];
    let meaning = [4, 3, 5];
    let fused = fuse(&[&words, &meaning]);
    let ids: Vec<i64> = fused.iter().map(|(id, _)| *id).collect();
    // 3 is in both lists; then 1 and 4 (both first in one list), the words' first.
    assert_eq!(ids, [3, 1, 4, 2, 5]);
    assert!((fused[1].1 - 1.0 / 61.0).abs() < 1e-12);
    assert!(fuse(&[]).is_empty());
}
