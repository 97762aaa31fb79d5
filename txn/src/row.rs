//! [`Row`]: an immutable row value shared by a thin pointer to one allocation that holds the
//! reference count, the length and the bytes.
//!
//! Why not `Arc<Vec<u8>>` or `Arc<[u8]>`: the first is two allocations (a reader's clone and
//! its first look at the bytes are two cache misses, and every row costs an allocation more);
//! the second is a fat pointer, which grows a [`crate::record::Record`] past one cache line.
//! This is `Arc<[u8]>`'s layout behind a one-word pointer, with `Arc`'s reference counting.

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{self, AtomicUsize, Ordering};

/// The start of a row's allocation; the bytes follow it.
#[repr(C)]
struct Header {
    count: AtomicUsize,
    len: usize,
}

/// An immutable row value, shared by pointer. The bytes are opaque to `txn`.
pub struct Row(NonNull<Header>);

// SAFETY: the bytes never change after construction and the count is atomic, as in `Arc<[u8]>`.
unsafe impl Send for Row {}
// SAFETY: as above.
unsafe impl Sync for Row {}

/// Above this many references, as `Arc` does, abort rather than risk the count overflowing.
const MAX_COUNT: usize = isize::MAX as usize;

impl Row {
    fn layout(len: usize) -> Layout {
        let size = std::mem::size_of::<Header>().checked_add(len).expect("row size overflows");
        Layout::from_size_align(size, std::mem::align_of::<Header>()).expect("row layout")
    }

    /// A row holding a copy of `bytes`.
    pub fn new(bytes: &[u8]) -> Row {
        let layout = Row::layout(bytes.len());
        // SAFETY: the layout is non-zero-sized (it has the header). The header is written
        // before anything reads it, and the bytes are copied into the space after it, which
        // the layout reserves.
        unsafe {
            let ptr = alloc::alloc(layout).cast::<Header>();
            let Some(ptr) = NonNull::new(ptr) else { alloc::handle_alloc_error(layout) };
            ptr.as_ptr().write(Header { count: AtomicUsize::new(1), len: bytes.len() });
            let data = ptr.as_ptr().cast::<u8>().add(std::mem::size_of::<Header>());
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
            Row(ptr)
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the allocation lives while this reference to it does.
        unsafe { self.0.as_ref() }
    }
}

impl Deref for Row {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes, initialized at construction and never written again, follow the
        // header in an allocation that lives while `self` does.
        unsafe {
            let data = self.0.as_ptr().cast::<u8>().add(std::mem::size_of::<Header>());
            std::slice::from_raw_parts(data, self.header().len)
        }
    }
}

impl Clone for Row {
    fn clone(&self) -> Row {
        // Relaxed, as in `Arc::clone`: a new reference is made from an existing one, which
        // keeps the allocation alive meanwhile.
        if self.header().count.fetch_add(1, Ordering::Relaxed) > MAX_COUNT {
            std::process::abort();
        }
        Row(self.0)
    }
}

impl Drop for Row {
    fn drop(&mut self) {
        // As in `Arc::drop`: release our uses of the bytes; the last owner acquires all of
        // them before freeing.
        if self.header().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        atomic::fence(Ordering::Acquire);
        let layout = Row::layout(self.header().len);
        // SAFETY: this was the last reference; the allocation was made with this layout.
        unsafe { alloc::dealloc(self.0.as_ptr().cast::<u8>(), layout) }
    }
}

impl From<Vec<u8>> for Row {
    fn from(bytes: Vec<u8>) -> Row {
        Row::new(&bytes)
    }
}

impl From<&[u8]> for Row {
    fn from(bytes: &[u8]) -> Row {
        Row::new(bytes)
    }
}

impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        **self == **other
    }
}

impl Eq for Row {}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::Row;

    #[test]
    fn rows_share_their_bytes_and_free_them_once() {
        let a = Row::from(vec![1, 2, 3]);
        let b = a.clone();
        assert_eq!(&*b, &[1, 2, 3]);
        assert_eq!(a, b);
        drop(a);
        assert_eq!(b.len(), 3);
        let empty = Row::from(Vec::new());
        assert!(empty.is_empty());
        assert_ne!(b, empty);
        // One word: a record's row slot stays within its cache line.
        assert_eq!(std::mem::size_of::<Option<Row>>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn rows_cross_threads() {
        let row = Row::from(vec![7; 100]);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let r = row.clone();
                std::thread::spawn(move || {
                    (0..1000).map(|_| r.clone()).map(|r| r.len()).sum::<usize>()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 100_000);
        }
        assert_eq!(row.len(), 100);
    }
}
