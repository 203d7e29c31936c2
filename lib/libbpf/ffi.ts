/**
 * The one symbol table for libbpf (1.1.2 and later) and the few libc calls the
 * wrappers need. C types are given beside each parameter. Calls that return a
 * pointer are only checked for NULL: libbpf sets errno for them, but errno is
 * not trustworthy once control is back in JavaScript.
 */

/** libbpf symbols; anything newer than libbpf 1.1.2 must be `optional: true`. */
export const LIBBPF_SYMBOLS = {
  /** struct bpf_object *bpf_object__open_mem(const void *obj_buf, size_t obj_buf_sz, const struct bpf_object_open_opts *opts) */
  bpf_object__open_mem: { parameters: ["buffer", "usize", "pointer"], result: "pointer" },
  /** int bpf_object__load(struct bpf_object *obj) */
  bpf_object__load: { parameters: ["pointer"], result: "i32" },
  /** void bpf_object__close(struct bpf_object *obj) */
  bpf_object__close: { parameters: ["pointer"], result: "void" },
  /** struct bpf_map *bpf_object__find_map_by_name(const struct bpf_object *obj, const char *name) */
  bpf_object__find_map_by_name: { parameters: ["pointer", "buffer"], result: "pointer" },
  /** struct bpf_program *bpf_object__find_program_by_name(const struct bpf_object *obj, const char *name) */
  bpf_object__find_program_by_name: { parameters: ["pointer", "buffer"], result: "pointer" },
  /** int bpf_program__fd(const struct bpf_program *prog) */
  bpf_program__fd: { parameters: ["pointer"], result: "i32" },
  /** int bpf_map__fd(const struct bpf_map *map) */
  bpf_map__fd: { parameters: ["pointer"], result: "i32" },
  /** enum bpf_map_type bpf_map__type(const struct bpf_map *map) */
  bpf_map__type: { parameters: ["pointer"], result: "u32" },
  /** __u32 bpf_map__key_size(const struct bpf_map *map) */
  bpf_map__key_size: { parameters: ["pointer"], result: "u32" },
  /** __u32 bpf_map__value_size(const struct bpf_map *map) */
  bpf_map__value_size: { parameters: ["pointer"], result: "u32" },
  /** __u32 bpf_map__max_entries(const struct bpf_map *map) */
  bpf_map__max_entries: { parameters: ["pointer"], result: "u32" },
  /** int bpf_map__set_pin_path(struct bpf_map *map, const char *path) */
  bpf_map__set_pin_path: { parameters: ["pointer", "buffer"], result: "i32" },
  /** int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags) */
  bpf_map_update_elem: { parameters: ["i32", "buffer", "buffer", "u64"], result: "i32" },
  /** int bpf_map_delete_elem(int fd, const void *key) */
  bpf_map_delete_elem: { parameters: ["i32", "buffer"], result: "i32" },
  /** int bpf_map_lookup_elem(int fd, const void *key, void *value) */
  bpf_map_lookup_elem: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  /** int bpf_map_get_next_key(int fd, const void *key, void *next_key); key NULL = first */
  bpf_map_get_next_key: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  /**
   * int bpf_map_lookup_batch(int fd, void *in_batch, void *out_batch, void *keys,
   *                          void *values, __u32 *count, const struct bpf_map_batch_opts *opts)
   */
  bpf_map_lookup_batch: {
    parameters: ["i32", "buffer", "buffer", "buffer", "buffer", "buffer", "pointer"],
    result: "i32",
  },
  /** int bpf_link_create(int prog_fd, int target_fd, enum bpf_attach_type type, const struct bpf_link_create_opts *opts) */
  bpf_link_create: { parameters: ["i32", "i32", "u32", "pointer"], result: "i32" },
  /** int bpf_link_update(int link_fd, int new_prog_fd, const struct bpf_link_update_opts *opts) */
  bpf_link_update: { parameters: ["i32", "i32", "pointer"], result: "i32" },
  /** int bpf_link_detach(int link_fd) */
  bpf_link_detach: { parameters: ["i32"], result: "i32" },
  /** int bpf_obj_pin(int fd, const char *pathname) */
  bpf_obj_pin: { parameters: ["i32", "buffer"], result: "i32" },
  /** int bpf_obj_get(const char *pathname) */
  bpf_obj_get: { parameters: ["buffer"], result: "i32" },
  /** int bpf_prog_get_fd_by_id(__u32 id) */
  bpf_prog_get_fd_by_id: { parameters: ["u32"], result: "i32" },
  /** int bpf_map_get_fd_by_id(__u32 id) */
  bpf_map_get_fd_by_id: { parameters: ["u32"], result: "i32" },
  /** int bpf_obj_get_info_by_fd(int bpf_fd, void *info, __u32 *info_len) */
  bpf_obj_get_info_by_fd: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  /**
   * int bpf_prog_query(int target_fd, enum bpf_attach_type type, __u32 query_flags,
   *                    __u32 *attach_flags, __u32 *prog_ids, __u32 *prog_cnt)
   */
  bpf_prog_query: {
    parameters: ["i32", "u32", "u32", "buffer", "buffer", "buffer"],
    result: "i32",
  },
  /**
   * struct ring_buffer *ring_buffer__new(int map_fd, ring_buffer_sample_fn sample_cb, void *ctx,
   *                                      const struct ring_buffer_opts *opts)
   */
  ring_buffer__new: { parameters: ["i32", "function", "pointer", "pointer"], result: "pointer" },
  /** int ring_buffer__consume(struct ring_buffer *rb): every record ready now, no waiting */
  ring_buffer__consume: { parameters: ["pointer"], result: "i32" },
  /** void ring_buffer__free(struct ring_buffer *rb) */
  ring_buffer__free: { parameters: ["pointer"], result: "void" },
  /** int libbpf_num_possible_cpus(void) */
  libbpf_num_possible_cpus: { parameters: [], result: "i32" },
  /** libbpf_print_fn_t libbpf_set_print(libbpf_print_fn_t fn); fn NULL silences libbpf */
  libbpf_set_print: { parameters: ["function"], result: "pointer" },
  /** __u32 libbpf_major_version(void) */
  libbpf_major_version: { parameters: [], result: "u32" },
  /** __u32 libbpf_minor_version(void) */
  libbpf_minor_version: { parameters: [], result: "u32" },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * libc calls for the file descriptors libbpf hands out as plain ints, and the
 * socket calls of the doctor's prober (which reads SO_MARK on its own socket).
 */
export const LIBC_SYMBOLS = {
  /** int open(const char *pathname, int flags) */
  open: { parameters: ["buffer", "i32"], result: "i32" },
  /** int close(int fd) */
  close: { parameters: ["i32"], result: "i32" },
  /** ssize_t read(int fd, void *buf, size_t count) */
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  /** ssize_t write(int fd, const void *buf, size_t count) */
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  /** int socket(int domain, int type, int protocol) */
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  /** int connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen) */
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  /** int poll(struct pollfd *fds, nfds_t nfds, int timeout) */
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32" },
  /** int getpeername(int sockfd, struct sockaddr *addr, socklen_t *addrlen) */
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  /** int getsockopt(int sockfd, int level, int optname, void *optval, socklen_t *optlen) */
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  /** int clock_gettime(clockid_t clockid, struct timespec *tp) */
  clock_gettime: { parameters: ["i32", "buffer"], result: "i32" },
  /** int flock(int fd, int operation) */
  flock: { parameters: ["i32", "i32"], result: "i32" },
  /** int *__errno_location(void): this thread's errno, read right after a failed call */
  __errno_location: { parameters: [], result: "pointer" },
  /** int vsnprintf(char *str, size_t size, const char *format, va_list ap) */
  vsnprintf: { parameters: ["buffer", "usize", "pointer", "pointer"], result: "i32" },
  /** int malloc_trim(size_t pad): hands the heap's free pages back to the kernel */
  malloc_trim: { parameters: ["usize"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** typedef int (*ring_buffer_sample_fn)(void *ctx, void *data, size_t size) */
export const RING_BUFFER_SAMPLE_FN = {
  parameters: ["pointer", "pointer", "usize"],
  result: "i32",
} as const satisfies Deno.UnsafeCallbackDefinition;

/** enum bpf_attach_type values Lace uses. */
export const BPF_CGROUP_INET4_CONNECT = 10;
export const BPF_CGROUP_INET6_CONNECT = 11;
/** enum bpf_link_type: BPF_LINK_TYPE_CGROUP. */
export const BPF_LINK_TYPE_CGROUP = 3;
/** bpf_map_update_elem flags. */
export const BPF_ANY = 0n;
/** flock(2) operations. */
export const LOCK_SH = 1;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;
/** clock_gettime(2) clocks: the one bpf_ktime_get_coarse_ns() reads (coarser). */
export const CLOCK_MONOTONIC = 1;
/** open(2) flags. */
export const O_RDONLY = 0;
export const O_DIRECTORY = 0o200000;
export const O_CLOEXEC = 0o2000000;

/** A NUL-terminated C string for a "buffer" parameter. */
export function cString(text: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(text);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}
