package adapter_test

import (
	"errors"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
)

type replyError struct{ msg string }

func (e *replyError) Error() string { return e.msg }

func TestNoScript(t *testing.T) {
	reply := &replyError{"NOSCRIPT No matching script"}
	err := adapter.NoScript(reply)
	if !errors.Is(err, driver.ErrNoScript) || !errors.Is(err, reply) || err.Error() != reply.Error() {
		t.Errorf("NoScript(%v) = %v; want the same text, matching driver.ErrNoScript and the reply", reply, err)
	}
	var asReply *replyError
	if !errors.As(err, &asReply) || asReply != reply {
		t.Errorf("errors.As(NoScript(%v), *replyError) = %v, want the reply", reply, asReply)
	}
	if err := adapter.NoScript(nil); err != nil {
		t.Errorf("NoScript(nil) = %v, want nil", err)
	}
}
