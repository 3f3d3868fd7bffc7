//! Large query values are freed on a thread of their own, not on the edit's.
//!
//! Salsa frees the memos a revision replaced when the next revision starts, inside the setter
//! of the new text: so an edit that follows a fusion plan first frees the previous version's
//! flat program, fused program and plan, tens of megabytes in small allocations on a large
//! file, and waits for it (15–20 ms on the 2,000-line benchmark file, more than cancelling the
//! plan itself). The back half's queries return their values in `FreedLater`, whose drop hands
//! the value to one background thread that frees it.

use std::ops::Deref;
use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel};

/// `T`, freed on the freeing thread when dropped (or here, when that thread cannot be had).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreedLater<T: Send + 'static>(Option<Box<T>>);

impl<T: Send + 'static> FreedLater<T> {
    pub fn new(value: T) -> FreedLater<T> {
        FreedLater(Some(Box::new(value)))
    }
}

impl<T: Send + 'static> Deref for FreedLater<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0.as_deref().expect("a value until it is dropped")
    }
}

impl<T: Send + 'static> Drop for FreedLater<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            free_later(value);
        }
    }
}

type Garbage = Box<dyn Send>;

static FREEING: Mutex<Option<Sender<Garbage>>> = Mutex::new(None);

fn free_later(value: Garbage) {
    let undelivered = {
        let mut freeing = FREEING.lock().unwrap_or_else(|e| e.into_inner());
        if freeing.is_none() {
            *freeing = freeing_thread();
        }
        match freeing.as_ref() {
            Some(sender) => sender.send(value).err().map(|unsent| unsent.0),
            None => Some(value),
        }
    };
    // No thread to be had, or it is gone: the value is freed here, as salsa would have, and
    // outside the lock, so that a value holding another `FreedLater` frees that one too.
    drop(undelivered);
}

fn freeing_thread() -> Option<Sender<Garbage>> {
    let (send, receive) = channel::<Garbage>();
    let thread = std::thread::Builder::new().name("weft-free".into());
    thread.spawn(move || receive.into_iter().for_each(drop)).ok().map(|_| send)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_dropped_value_is_freed_on_the_freeing_thread() {
        let shared = Arc::new(());
        let value = FreedLater::new(shared.clone());
        assert_eq!(**value, ());
        drop(value);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while Arc::strong_count(&shared) > 1 {
            assert!(std::time::Instant::now() < deadline, "the value was never freed");
            std::thread::yield_now();
        }
    }
}
