package redisnode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/locksmith-go/locksmith/internal/redisserver"
)

// portAttempts bounds the retries when a free port picked by the kernel was
// taken by someone else before Docker bound it.
const portAttempts = 3

// Labels put on every container, so the leak check in Main finds exactly the
// containers of this test binary.
const (
	// LabelRun is set to the run id of the test binary that created the
	// container.
	LabelRun = "org.locksmith.test"
	// LabelTest is set to the name of the test that created the container.
	LabelTest = "org.locksmith.test.name"
)

// runID tells this test binary's containers from those of any other run on
// the same Docker engine.
var runID = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}()

// RunID returns the value of [LabelRun] on this test binary's containers.
func RunID() string { return runID }

// Inside every container: the server listens on the official ports and keeps
// its config, certificates and data in /data (the image's working directory).
const (
	redisPort     = "6379"
	redisTLSPort  = "6380"
	redisBusPort  = "16379" // Redis's default: port + 10000
	containerDir  = "/data"
	containerConf = containerDir + "/redis.conf"
	containerTLS  = containerDir + "/tls"
)

// NewContainerProvider returns the provider that runs each node in its own
// container of image (see [ImageEnv]) through testcontainers-go, with
// redis-server from the image's PATH as entrypoint.
//
// Addressing: each port is published on 127.0.0.1 at a host port chosen
// once per node, so [Node.Addr] is "127.0.0.1:port" and survives Stop, Kill
// and Restart (Docker would pick a new random port on every start). Cluster
// nodes are the exception; see [FormCluster].
//
// Stop, Kill, Pause, Resume and Restart are docker stop, docker kill,
// docker pause, docker unpause and docker start. Containers are removed, with
// their data, when the test ends.
func NewContainerProvider(image string) Provider { return containerProvider{image: image} }

type containerProvider struct{ image string }

func (containerProvider) Backend() Backend { return Container }

// containersUsed records that this binary created containers, so that the
// leak check asks Docker about them.
var containersUsed atomic.Bool

func (p containerProvider) Start(t testing.TB, n int, cfg Config) []*Node {
	t.Helper()
	requireMain(t)
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Fatalf("redisnode: the %s backend cannot start: Docker does not answer: %v (set %s=%s to use processes)",
			Container, err, BackendEnv, Process)
	}
	if _, err := cli.ImageInspect(ctx, p.image); err != nil && p.image == DefaultImage {
		// The default image is built locally and cannot be pulled.
		t.Fatalf("redisnode: the %s backend cannot start: image %s is missing; build it with integration/build-image.sh (%v)",
			Container, p.image, err)
	}
	containersUsed.Store(true)
	var ca *redisserver.CA
	if cfg.TLS {
		if ca, err = redisserver.NewCA(); err != nil {
			t.Fatalf("redisnode: test CA: %v", err)
		}
	}
	logger := tclog.TestLogger(t)
	return startAll(t, Container, n, cfg, ca, func(ctx context.Context, i int) (server, error) {
		return startContainer(ctx, t.Name(), logger, p.image, cfg, ca)
	})
}

func startContainer(ctx context.Context, testName string, logger tclog.Logger, image string, cfg Config, ca *redisserver.CA) (server, error) {
	lines := [][]string{
		{"port", redisPort},
		{"protected-mode", "no"}, // reached from the host, through Docker's NAT
		{"dir", containerDir},
		{"daemonize", "no"},
		{"logfile", ""}, // stdout, which is the container log
	}
	var files []testcontainers.ContainerFile
	if ca != nil {
		lines = append(lines,
			[]string{"tls-port", redisTLSPort},
			[]string{"tls-cert-file", containerTLS + "/server.crt"},
			[]string{"tls-key-file", containerTLS + "/server.key"},
			[]string{"tls-ca-cert-file", containerTLS + "/ca.crt"},
			[]string{"tls-auth-clients", "no"},
		)
		// This first certificate covers loopback only: the container's IP
		// is known once it runs, when afterStart installs one that covers
		// it too.
		cert, err := ca.Issue()
		if err != nil {
			return nil, err
		}
		files = append(files,
			containerFile(containerTLS+"/ca.crt", ca.CertPEM()),
			containerFile(containerTLS+"/server.crt", cert.CertPEM),
			containerFile(containerTLS+"/server.key", cert.KeyPEM),
		)
	}
	lines = append(lines, cfg.directives()...)
	lines = append(lines, cfg.Directives...)
	files = append(files, containerFile(containerConf, []byte(redisserver.Render(lines))))

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
		d := &dockerNode{hostPort: ports[0], cluster: cfg.Cluster, ca: ca, password: cfg.Password, ports: ports}
		exposed := []string{redisPort + "/tcp"}
		bindings := network.PortMap{network.MustParsePort(redisPort + "/tcp"): {loopbackBinding(d.hostPort)}}
		if ca != nil {
			d.hostTLSPort = ports[1]
			exposed = append(exposed, redisTLSPort+"/tcp")
			bindings[network.MustParsePort(redisTLSPort+"/tcp")] = []network.PortBinding{loopbackBinding(d.hostTLSPort)}
		}
		c, err := testcontainers.Run(ctx, image,
			testcontainers.WithLogger(logger),
			// Both this project's image and the official one have
			// redis-server on PATH; naming it skips the official image's
			// entrypoint script, which the scratch image does not have.
			testcontainers.WithEntrypoint("redis-server"),
			testcontainers.WithCmd(containerConf),
			testcontainers.WithExposedPorts(exposed...),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.PortBindings = bindings }),
			testcontainers.WithLabels(map[string]string{LabelRun: runID, LabelTest: testName}),
			testcontainers.WithFiles(files...),
		)
		if c == nil {
			redisserver.ReleasePorts(ports...)
			return nil, fmt.Errorf("creating a container of %s: %w", image, err)
		}
		d.c = c
		if err == nil {
			err = d.refreshIP(ctx)
		}
		if err == nil {
			// Docker has published the ports for this container, so the
			// address should lead to it. Should it lead to a Redis in
			// protected mode, which none of these containers is, start
			// over on other ports rather than hand out an address that
			// reaches a stranger.
			if err = waitReady(ctx, d.addr(), cfg.Password); err == nil {
				return d, nil
			}
			if isDenied(err) && logger != nil {
				logger.Printf("redisnode: %v; starting another container on other ports", err)
			}
		}
		if !isPortClash(err) && !isDenied(err) {
			return d, err
		}
		lastErr = err
		_ = d.destroy(ctx) // try again with other ports
	}
	return nil, fmt.Errorf("no free host port after %d attempts: %w", portAttempts, lastErr)
}

func loopbackBinding(port int) network.PortBinding {
	return network.PortBinding{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(port)}
}

func isPortClash(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "port is already allocated") ||
		strings.Contains(err.Error(), "address already in use"))
}

func containerFile(path string, data []byte) testcontainers.ContainerFile {
	return testcontainers.ContainerFile{Reader: strings.NewReader(string(data)), ContainerFilePath: path, FileMode: 0o600}
}

// dockerNode is one container; docker start reuses it, with its published
// ports and its /data.
type dockerNode struct {
	c                     *testcontainers.DockerContainer
	hostPort, hostTLSPort int
	ports                 []int // reserved by redisserver.FreePorts until destroy
	cluster               bool
	ca                    *redisserver.CA
	password              string

	mu      sync.Mutex
	ip      string // on the Docker bridge, as of the last start
	certGen int    // certificates installed by afterStart so far
}

func (d *dockerNode) containerIP() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ip
}

func (d *dockerNode) refreshIP(ctx context.Context) error {
	ip, err := d.c.ContainerIP(ctx)
	if err != nil {
		return err
	}
	if ip == "" {
		return errors.New("the container has no IP on the Docker bridge")
	}
	d.mu.Lock()
	d.ip = ip
	d.mu.Unlock()
	return nil
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
	switch {
	case d.hostTLSPort == 0:
		return ""
	case d.cluster:
		return net.JoinHostPort(d.containerIP(), redisTLSPort)
	default:
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.hostTLSPort))
	}
}

func (d *dockerNode) stop(ctx context.Context) error {
	timeout := 10 * time.Second // then Docker kills it
	return d.c.Stop(ctx, &timeout)
}

func (d *dockerNode) kill(ctx context.Context) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	if _, err := cli.ContainerKill(ctx, d.c.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return err
	}
	// docker kill returns once the signal is sent; wait for the exit so
	// that a following start finds the container stopped.
	wait := cli.ContainerWait(ctx, d.c.GetContainerID(), client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
		return nil
	case err := <-wait.Error:
		return err
	}
}

func (d *dockerNode) pause(ctx context.Context) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	_, err = cli.ContainerPause(ctx, d.c.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

func (d *dockerNode) resume(ctx context.Context) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	_, err = cli.ContainerUnpause(ctx, d.c.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

func (d *dockerNode) start(ctx context.Context) error {
	if err := d.c.Start(ctx); err != nil {
		return err
	}
	// Docker may hand out another bridge IP on every start.
	return d.refreshIP(ctx)
}

// afterStart installs, on a TLS node, a certificate that also covers the
// container's current IP, and makes Redis load it (Redis 7 reloads TLS
// material on CONFIG SET). The file name changes every time because Redis
// ignores a CONFIG SET that repeats the current value.
func (d *dockerNode) afterStart(ctx context.Context, n *Node) error {
	if d.ca == nil {
		return nil
	}
	ip := net.ParseIP(d.containerIP())
	cert, err := d.ca.Issue(ip)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.certGen++
	gen := d.certGen
	d.mu.Unlock()
	certPath := fmt.Sprintf("%s/server-%d.crt", containerTLS, gen)
	keyPath := fmt.Sprintf("%s/server-%d.key", containerTLS, gen)
	if err := d.c.CopyToContainer(ctx, cert.CertPEM, certPath, 0o600); err != nil {
		return err
	}
	if err := d.c.CopyToContainer(ctx, cert.KeyPEM, keyPath, 0o600); err != nil {
		return err
	}
	if _, err := n.DoContext(ctx, "CONFIG", "SET", "tls-cert-file", certPath, "tls-key-file", keyPath); err != nil {
		return fmt.Errorf("loading a certificate for %s: %w", ip, err)
	}
	return nil
}

func (d *dockerNode) logTail(ctx context.Context) string {
	rc, err := d.c.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil && len(data) == 0 {
		return ""
	}
	return tailLines(string(data), 20)
}

func (d *dockerNode) destroy(ctx context.Context) error {
	// Removal is forced, so a paused or running container goes at once;
	// there is nothing to shut down gracefully at this point.
	err := testcontainers.TerminateContainer(d.c, testcontainers.StopContext(ctx), testcontainers.StopTimeout(0))
	if err == nil {
		redisserver.ReleasePorts(d.ports...) // Docker has let go of them
	}
	return err
}

var (
	dockerOnce sync.Once
	dockerCli  *testcontainers.DockerClient
	dockerErr  error
)

// dockerClient returns the client of the Docker engine testcontainers uses,
// made once per test binary.
func dockerClient(ctx context.Context) (cli *testcontainers.DockerClient, err error) {
	dockerOnce.Do(func() {
		defer func() {
			// Some engine discovery paths of testcontainers panic when no
			// engine is found; that is an answer here, not a crash.
			if r := recover(); r != nil {
				dockerErr = fmt.Errorf("looking for a Docker engine: %v", r)
			}
		}()
		dockerCli, dockerErr = testcontainers.NewDockerClientWithOpts(ctx)
	})
	return dockerCli, dockerErr
}

// containerUsable tells whether the container backend can run image without
// pulling it.
func containerUsable(image string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return fmt.Errorf("the Docker engine does not answer: %w", err)
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("image %s is not present locally: %w", image, err)
	}
	return nil
}

func leakedContainers() ([]string, error) {
	if !containersUsed.Load() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelRun+"="+runID),
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, fmt.Sprintf("container %.12s (%s, image %s, test %s)", c.ID, c.State, c.Image, c.Labels[LabelTest]))
	}
	return out, nil
}

func removeLeakedContainers() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelRun+"="+runID),
	})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
}

func removeLeaks() {
	redisserver.KillLeaked()
	removeLeakedContainers()
}
