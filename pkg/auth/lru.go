package auth

import "container/list"

// lru is a map bounded to max entries that evicts the least recently used
// one to make room: what a client can fill (presented keys, client
// addresses) pushes out its own oldest entries, not everything at once.
// Not safe for concurrent use; its owner locks.
type lru[K comparable, V any] struct {
	max   int
	order *list.List // front: most recently used; values are *lruItem
	items map[K]*list.Element
}

type lruItem[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

// get returns key's value and marks it used.
func (c *lru[K, V]) get(key K) (V, bool) {
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruItem[K, V]).val, true
}

// put stores key's value, marks it used, and evicts the least recently used
// entry when over max.
func (c *lru[K, V]) put(key K, val V) {
	if el, ok := c.items[key]; ok {
		el.Value.(*lruItem[K, V]).val = val
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&lruItem[K, V]{key: key, val: val})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruItem[K, V]).key)
	}
}

func (c *lru[K, V]) remove(key K) {
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

func (c *lru[K, V]) len() int { return c.order.Len() }
