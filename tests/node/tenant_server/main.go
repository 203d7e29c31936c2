// The tenant server of the real node's isolation tests (tests/node/tenant_pods.ts): one process
// listening on any number of HTTP and HTTPS ports that logs every connection and request on
// stdout with what identifies it, so a test can tell whose request reached which pod. It plays
// the victim (answers /echo) and the attacker (answers /redirect with a redirect to the same
// host at another port, as the kubelet follows). Standard library only, built static by
// tests/node/images.ts.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func ports(list string) []int {
	var out []int
	for _, p := range strings.Split(list, ",") {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			log.Fatalf("not a port: %q", p)
		}
		out = append(out, n)
	}
	return out
}

// selfSigned makes a certificate for any name: the kubelet does not verify it.
func selfSigned() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	template := x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lace-tenant"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

var (
	mu     sync.Mutex
	served = map[string]int{}
)

// next counts the requests for one path and query: the n-th request of a probe picks the n-th
// variant of its redirect.
func next(key string) int {
	mu.Lock()
	defer mu.Unlock()
	n := served[key]
	served[key] = n + 1
	return n
}

func list(value, fallback string) []string {
	if value == "" {
		value = fallback
	}
	return strings.Split(value, ",")
}

// redirect answers with a redirect to the host the request named at another port:
// /redirect?codes=301,302&schemes=http,https&http=9090&https=9443&msg=M. The n-th request takes
// codes[n % len(codes)] and schemes[n / len(codes) % len(schemes)], so a probe period walks the
// whole matrix.
func redirect(w http.ResponseWriter, r *http.Request, port int) {
	q := r.URL.Query()
	codes, schemes := list(q.Get("codes"), "302"), list(q.Get("schemes"), "http")
	n := next(r.URL.RequestURI())
	code, err := strconv.Atoi(codes[n%len(codes)])
	if err != nil || code < 300 || code > 399 {
		http.Error(w, "bad code", http.StatusBadRequest)
		return
	}
	scheme := schemes[(n/len(codes))%len(schemes)]
	target := q.Get(scheme)
	host := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		host = h
	}
	location := fmt.Sprintf("%s://%s/echo?msg=%s-%d-%s", scheme,
		net.JoinHostPort(host, target), q.Get("msg"), code, scheme)
	log.Printf("redirect port=%d code=%d location=%s", port, code, location)
	w.Header().Set("Location", location)
	w.WriteHeader(code)
}

func handler(port int, secure bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Printf("request port=%d tls=%t method=%s uri=%s host=%s remote=%s agent=%q",
			port, secure, r.Method, r.URL.RequestURI(), r.Host, r.RemoteAddr, r.UserAgent())
		switch r.URL.Path {
		case "/redirect":
			redirect(w, r, port)
		default:
			fmt.Fprintf(w, "%s\n", r.URL.Query().Get("msg"))
		}
	})
}

func serve(port int, secure bool, cert tls.Certificate) {
	server := &http.Server{
		Handler:           handler(port, secure),
		ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(c net.Conn, state http.ConnState) {
			if state == http.StateNew {
				log.Printf("connection port=%d remote=%s", port, c.RemoteAddr())
			}
		},
	}
	listener, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		log.Fatal(err)
	}
	if secure {
		listener = tls.NewListener(listener, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	log.Printf("listening port=%d tls=%t", port, secure)
	log.Fatal(server.Serve(listener))
}

func main() {
	httpPorts := flag.String("http", "", "HTTP ports, comma-separated")
	httpsPorts := flag.String("https", "", "HTTPS ports, comma-separated")
	exitDelay := flag.Duration("exit-delay", 0, "how long to keep serving after SIGTERM")
	flag.Parse()
	log.SetFlags(log.Lmicroseconds)
	log.SetOutput(os.Stdout)
	cert := selfSigned()
	for _, p := range ports(*httpPorts) {
		go serve(p, false, cert)
	}
	for _, p := range ports(*httpsPorts) {
		go serve(p, true, cert)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	s := <-signals
	log.Printf("signal %s", s)
	time.Sleep(*exitDelay)
	os.Exit(0)
}
