package redlock

import (
	"errors"
	"testing"
)

func TestFenceKeySharesTheHashSlot(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"orders", "{orders}:fencing-token"},
		{"{order:42}:payment", "{order:42}:payment:fencing-token"},
		{"a{b}c", "a{b}c:fencing-token"},
		{"a{b", "{a{b}:fencing-token"},
		{"", "{}:fencing-token"},
	}
	for _, tt := range tests {
		got, err := fenceKey(tt.key)
		if err != nil || got != tt.want {
			t.Errorf("fenceKey(%q) = %q, %v; want %q", tt.key, got, err, tt.want)
			continue
		}
		if tt.key != "" && hashSlot(got) != hashSlot(tt.key) {
			t.Errorf("fenceKey(%q) = %q is in slot %d, the key in slot %d", tt.key, got, hashSlot(got), hashSlot(tt.key))
		}
	}
	for _, key := range []string{"a}b", "{}x}", "x{}y"} {
		if got, err := fenceKey(key); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("fenceKey(%q) = %q, %v; want ErrInvalidArgument", key, got, err)
		}
	}
}

// hashSlot is Redis Cluster's key slot: CRC16/XMODEM of the hash tag, or of
// the whole key without one, modulo 16384.
func hashSlot(key string) uint16 {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					break
				}
			}
			break
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

func TestHashSlotKnownValues(t *testing.T) {
	// Slots as CLUSTER KEYSLOT reports them.
	tests := []struct {
		key  string
		want uint16
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"123456789", 12739},
	}
	for _, tt := range tests {
		if got := hashSlot(tt.key); got != tt.want {
			t.Errorf("hashSlot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}
