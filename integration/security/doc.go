// Package security checks locksmith's adapters against Redis servers that
// require TLS, a password, or an ACL user with only the permissions
// locksmith needs. It holds tests only.
package security
