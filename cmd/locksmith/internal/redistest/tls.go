package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TLSServer is a Server that also listens for TLS on TLSPort, with a
// certificate for 127.0.0.1 and "localhost" signed by the CA in CAFile.
type TLSServer struct {
	*Server
	TLSPort int
	CAFile  string
}

// TLSURL returns the server's rediss:// URL.
func (s *TLSServer) TLSURL() string {
	return "rediss://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.TLSPort))
}

// StartTLS starts a server as Start does, with TLS on a second port.
func StartTLS(t testing.TB, directives ...string) *TLSServer {
	t.Helper()
	Skip(t)
	dir := t.TempDir()
	caFile, certFile, keyFile, err := writeCerts(dir)
	if err != nil {
		t.Fatalf("redistest: certificates: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	tlsDirectives := []string{
		"tls-port " + strconv.Itoa(port),
		"tls-cert-file " + certFile,
		"tls-key-file " + keyFile,
		"tls-ca-cert-file " + caFile,
		"tls-auth-clients no",
	}
	s := Start(t, append(tlsDirectives, directives...)...)
	return &TLSServer{Server: s, TLSPort: port, CAFile: caFile}
}

// writeCerts writes a CA and a server certificate it signs into dir.
func writeCerts(dir string) (caFile, certFile, keyFile string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", "", err
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", leafDER}, {keyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return "", "", "", err
		}
	}
	return caFile, certFile, keyFile, nil
}
