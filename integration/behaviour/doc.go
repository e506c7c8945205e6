// Package behaviour checks the redlock API against real Redis servers on
// one, three and five nodes, through each of locksmith's adapters. It holds
// tests only.
package behaviour
