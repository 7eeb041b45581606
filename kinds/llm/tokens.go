package llm

import (
	"hash/maphash"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// TokenCounter counts the tokens of a text.
type TokenCounter func(text string) int

var o200k struct {
	once  sync.Once
	codec *codec.Codec
}

// TiktokenCount counts tokens with OpenAI's o200k_base encoding (the one of
// the GPT-4o family), from github.com/tiktoken-go/tokenizer, whose
// vocabulary is compiled into the binary (nothing is downloaded; it is
// decoded on first use, ~25 ms). It is exact for current OpenAI models and
// a close estimate for others (Claude's and Llama's tokenizers are BPE
// vocabularies of similar size): leave some headroom in max_tokens.
func TiktokenCount(text string) int {
	if text == "" {
		return 0
	}
	o200k.once.Do(func() { o200k.codec = codec.NewO200kBase() })
	n, err := o200k.codec.Count(text)
	if err != nil {
		return EstimateTokens(text)
	}
	return n
}

// EstimateTokens is the cheap estimate: one token per four characters.
func EstimateTokens(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// perMessageTokens is the framing every message costs (role, separators).
const perMessageTokens = 4

// tokenCache memoizes message token counts across executions: a stored
// conversation is re-read on every execution, and tokenizing is ~100 ns per
// character. It is keyed by a hash of the message and cleared when full.
type tokenCache struct {
	count TokenCounter
	seed  maphash.Seed
	mu    sync.Mutex
	m     map[uint64]int
}

const tokenCacheMax = 1 << 16

func newTokenCache(count TokenCounter) *tokenCache {
	return &tokenCache{count: count, seed: maphash.MakeSeed(), m: map[uint64]int{}}
}

func (c *tokenCache) message(m *Message) int {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(string(m.Role))
	h.WriteByte(0)
	h.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		h.WriteByte(0)
		h.WriteString(tc.Name)
		h.WriteByte(0)
		h.WriteString(tc.Arguments)
	}
	key := h.Sum64()
	c.mu.Lock()
	n, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = perMessageTokens + c.count(m.Content)
	for _, tc := range m.ToolCalls {
		n += c.count(tc.Name) + c.count(tc.Arguments) + perMessageTokens
	}
	c.mu.Lock()
	if len(c.m) >= tokenCacheMax {
		clear(c.m)
	}
	c.m[key] = n
	c.mu.Unlock()
	return n
}
