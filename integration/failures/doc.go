// Package failures checks redlock against real Redis servers that stop, die,
// restart, forget their scripts or freeze, through each of locksmith's
// adapters. It holds tests only.
package failures
