package driver_test

import (
	"errors"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

type replyError struct{ msg string }

func (e *replyError) Error() string { return e.msg }

func TestMarkNoScript(t *testing.T) {
	reply := &replyError{"NOSCRIPT No matching script"}
	err := driver.MarkNoScript(reply)
	if !errors.Is(err, driver.ErrNoScript) || !errors.Is(err, reply) || err.Error() != reply.Error() {
		t.Errorf("MarkNoScript(%v) = %v; want the same text, matching driver.ErrNoScript and the reply", reply, err)
	}
	var asReply *replyError
	if !errors.As(err, &asReply) || asReply != reply {
		t.Errorf("errors.As(MarkNoScript(%v), *replyError) = %v, want the reply", reply, asReply)
	}
	if err := driver.MarkNoScript(nil); err != nil {
		t.Errorf("MarkNoScript(nil) = %v, want nil", err)
	}
}
