package redisnode

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redisserver"
)

// portAttempts bounds the retries when a free port picked by the kernel was
// taken by someone else before Docker bound it.
const portAttempts = 3

// Labels put on every container, so that the leak check in Main finds
// exactly the containers of this test binary: the run id, which tells this
// binary's containers from those of any other run on the same Docker
// engine, and the name of the test that created the container.
const (
	labelRun  = "org.locksmith.test"
	labelTest = "org.locksmith.test.name"
)

var runID = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}()

// Inside every container: the server listens on the official ports and keeps
// its config, certificates and data in /data (the image's working directory).
const (
	redisPort     = "6379"
	redisTLSPort  = "6380"
	redisBusPort  = "16379" // Redis's default: port + 10000
	containerDir  = "/data"
	containerConf = containerDir + "/redis.conf"
)

// containersUsed records that this binary created containers, so that the
// leak check asks Docker about them.
var containersUsed atomic.Bool

// startContainers runs each node in its own container of image (see
// [ImageEnv]) with the docker command, with redis-server from the image's
// PATH as entrypoint.
//
// Addressing: each port is published on 127.0.0.1 at a host port chosen
// once per node, so [Node.Addr] is "127.0.0.1:port" and survives Stop, Kill
// and Restart (Docker would pick a new random port on every start). Cluster
// nodes are the exception; see [StartCluster].
//
// Stop, Kill, Pause, Resume and Restart are docker stop, docker kill,
// docker pause, docker unpause and docker start. Containers are removed, with
// their data, when the test ends.
func startContainers(t testing.TB, n int, cfg Config, image string) []*Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", image); err != nil {
		// No image is pulled: the default one is built locally.
		t.Fatalf("redisnode: the %s backend cannot start: %v (build the image with integration/build-image.sh, or set %s=%s)",
			Container, err, BackendEnv, Process)
	}
	containersUsed.Store(true)
	var ca *redisserver.CA
	if cfg.TLS {
		var err error
		if ca, err = redisserver.NewCA(); err != nil {
			t.Fatalf("redisnode: test CA: %v", err)
		}
	}
	return startAll(t, Container, n, cfg, ca, func(ctx context.Context, i int) (server, error) {
		return startContainer(ctx, t.Name(), image, cfg, ca)
	})
}

func startContainer(ctx context.Context, testName, image string, cfg Config, ca *redisserver.CA) (server, error) {
	// The files of /data are copied in from a directory of their own.
	dir, err := os.MkdirTemp("", "redisnode-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	lines := [][]string{
		{"port", redisPort},
		{"protected-mode", "no"}, // reached from the host, through Docker's NAT
		{"dir", containerDir},
		{"daemonize", "no"},
		{"logfile", ""}, // stdout, which is the container log
	}
	files := map[string][]byte{}
	if ca != nil {
		lines = append(lines,
			[]string{"tls-port", redisTLSPort},
			[]string{"tls-cert-file", containerDir + "/server.crt"},
			[]string{"tls-key-file", containerDir + "/server.key"},
			[]string{"tls-ca-cert-file", containerDir + "/ca.crt"},
			[]string{"tls-auth-clients", "no"},
		)
		cert, err := ca.Issue()
		if err != nil {
			return nil, err
		}
		files["ca.crt"], files["server.crt"], files["server.key"] = ca.CertPEM(), cert.CertPEM, cert.KeyPEM
	}
	lines = append(lines, cfg.directives()...)
	files["redis.conf"] = []byte(redisserver.Render(append(lines, cfg.Directives...)))
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}

	var lastErr error
	for range portAttempts {
		n := 1
		if ca != nil {
			n++ // the TLS port
		}
		ports, err := redisserver.FreePorts(n)
		if err != nil {
			return nil, err
		}
		d := &dockerNode{hostPort: ports[0], cluster: cfg.Cluster, ports: ports}
		args := []string{"create", "--label", labelRun + "=" + runID, "--label", labelTest + "=" + testName,
			// Both this project's image and the official one have
			// redis-server on PATH; naming it skips the official image's
			// entrypoint script, which the scratch image does not have.
			"--entrypoint", "redis-server",
			"--publish", "127.0.0.1:" + strconv.Itoa(d.hostPort) + ":" + redisPort}
		if ca != nil {
			d.hostTLSPort = ports[1]
			args = append(args, "--publish", "127.0.0.1:"+strconv.Itoa(d.hostTLSPort)+":"+redisTLSPort)
		}
		if d.id, err = docker(ctx, append(args, image, containerConf)...); err != nil {
			redisserver.ReleasePorts(ports...)
			return nil, err
		}
		_, err = docker(ctx, "cp", dir+"/.", d.id+":"+containerDir)
		if err == nil {
			err = d.start(ctx)
		}
		if err == nil {
			if err = waitReady(ctx, d.addr(), cfg.Password); err == nil {
				return d, nil
			}
		}
		if !strings.Contains(err.Error(), "port is already allocated") && !strings.Contains(err.Error(), "address already in use") {
			return d, err
		}
		lastErr = err
		_ = d.destroy(ctx) // try again with other ports
	}
	return nil, fmt.Errorf("no free host port after %d attempts: %w", portAttempts, lastErr)
}

// docker runs the docker command with args and returns what it printed on
// stdout, trimmed; its error carries what it printed on stderr.
func docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// dockerNode is one container; docker start reuses it, with its published
// ports and its /data.
type dockerNode struct {
	id                    string
	hostPort, hostTLSPort int
	ports                 []int // reserved by redisserver.FreePorts until destroy
	cluster               bool

	mu sync.Mutex
	ip string // on the Docker bridge, as of the last start
}

func (d *dockerNode) containerIP() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ip
}

func (d *dockerNode) addr() string {
	if d.cluster {
		return net.JoinHostPort(d.containerIP(), redisPort)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.hostPort))
}

func (d *dockerNode) meetAddr() (ip, port, busPort string) {
	return d.containerIP(), redisPort, redisBusPort
}

func (d *dockerNode) tlsAddr() string {
	if d.hostTLSPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.hostTLSPort))
}

func (d *dockerNode) stop(ctx context.Context) error {
	_, err := docker(ctx, "stop", "--time", "10", d.id) // then Docker kills it
	return err
}

// kill waits for the container to exit, since docker kill returns once the
// signal is sent, so that a following start finds it stopped.
func (d *dockerNode) kill(ctx context.Context) error {
	_, err := docker(ctx, "kill", d.id)
	if err == nil {
		_, err = docker(ctx, "wait", d.id)
	}
	return err
}

func (d *dockerNode) pause(ctx context.Context) error {
	_, err := docker(ctx, "pause", d.id)
	return err
}

func (d *dockerNode) resume(ctx context.Context) error {
	_, err := docker(ctx, "unpause", d.id)
	return err
}

// start starts the container and learns its IP, which Docker may change on
// every start.
func (d *dockerNode) start(ctx context.Context) error {
	if _, err := docker(ctx, "start", d.id); err != nil {
		return err
	}
	ip, err := docker(ctx, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", d.id)
	if err == nil && ip == "" {
		err = errors.New("the container has no IP on the Docker bridge")
	}
	d.mu.Lock()
	d.ip = ip
	d.mu.Unlock()
	return err
}

func (d *dockerNode) logTail(ctx context.Context) string {
	out, _ := exec.CommandContext(ctx, "docker", "logs", "--tail", "20", d.id).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// destroy removes the container at once, paused or running: there is
// nothing to shut down gracefully at this point.
func (d *dockerNode) destroy(ctx context.Context) error {
	_, err := docker(ctx, "rm", "--force", "--volumes", d.id)
	if err == nil {
		redisserver.ReleasePorts(d.ports...) // Docker has let go of them
	}
	return err
}

// leakedContainers describes the containers of this test binary that are
// still there and, when remove is set, removes them.
func leakedContainers(remove bool) ([]string, error) {
	if !containersUsed.Load() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := docker(ctx, "ps", "--all", "--filter", "label="+labelRun+"="+runID,
		"--format", `{{.ID}} ({{.State}}, image {{.Image}}, test {{.Label "`+labelTest+`"}})`)
	if err != nil || list == "" {
		return nil, err
	}
	var out []string
	for line := range strings.Lines(list) {
		out = append(out, "container "+strings.TrimSpace(line))
		if id, _, _ := strings.Cut(line, " "); remove {
			_, _ = docker(ctx, "rm", "--force", "--volumes", id)
		}
	}
	return out, nil
}
