/*
 * A fake libamd_smi.so for tests: every AMD SMI entry point joulegate uses, with the signatures
 * of amdsmi.h on the types declared in amdsmi_types.h, driven by the state file named in
 * FAKE_AMDSMI_STATE (see fake_state.h). Mutating calls are logged to FAKE_AMDSMI_LOG. Built with
 * -DFAKE_AMDSMI_LIB=24 it is a lib 24.x (ROCm 6.2/6.3: 68-byte power info, a year in the version),
 * by default a lib 26.x (ROCm 7: 192-byte power info).
 *
 * Per-device keys (<i>.<key>): uuid, power_w (average socket power), current_power_w,
 * gfx_mv, soc_mv, mem_mv (voltages, distinct by default so that a misread member shows),
 * energy_uj (base), energy_scale (the accumulator advances at power × scale; default 1;
 * 0 = frozen, the misbehaving counter), resolution_uj (default 15.3), gfx_activity,
 * umc_activity, vram_total, vram_used, gfx_mhz, mem_mhz, edge_c, hotspot_c, cap_uw,
 * cap_min_uw, cap_max_uw, cap_default_uw, numa_node, pci_domain, pci_bus (default 0xc1 +
 * index), pci_device, pci_function, unsupported and no_permission (comma-separated function
 * names). Global keys: device_count, init_error, and the version amdsmi_get_lib_version reports:
 * lib_year (24.x only), lib_major, lib_minor, lib_release (default 24.7.1.0 or 26.2.1).
 */
#include "amdsmi_types.h"
#include "fake_state.h"

#define ENV_STATE "FAKE_AMDSMI_STATE"
#define ENV_LOG "FAKE_AMDSMI_LOG"
#define MAX_DEVICES 64

/* One socket per GPU, as on discrete AMD GPUs. */
static int sockets[MAX_DEVICES];
static int processors[MAX_DEVICES];
/* Init is reference-counted like the real library; AMD GPUs are visible when any init asked. */
static int initialized = 0;
static int gpus_requested = 0;

static int device_count(void) {
  int n = (int)fake_num(ENV_STATE, -1, "device_count", 1);
  return n > MAX_DEVICES ? MAX_DEVICES : n;
}

static int processor_index(amdsmi_processor_handle h) {
  int *p = (int *)h;
  if (p < processors || p >= processors + device_count()) return -1;
  return *p;
}

#define GATE(fn, handle)                                                          \
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;                                \
  int idx = processor_index(handle);                                              \
  if (idx < 0) return AMDSMI_STATUS_INVAL;                                        \
  if (fake_listed(ENV_STATE, idx, "unsupported", fn)) return AMDSMI_STATUS_NOT_SUPPORTED; \
  if (fake_listed(ENV_STATE, idx, "no_permission", fn)) return AMDSMI_STATUS_NO_PERM;

#define NUM(key, def) fake_num(ENV_STATE, idx, key, def)

amdsmi_status_t amdsmi_init(uint64_t flags) {
  fake_log(ENV_LOG, "amdsmi_init %llu", (unsigned long long)flags);
  int err = (int)fake_num(ENV_STATE, -1, "init_error", 0);
  if (err != 0) return err;
  for (int i = 0; i < MAX_DEVICES; i++) sockets[i] = processors[i] = i;
  if (flags & AMDSMI_INIT_AMD_GPUS) gpus_requested = 1;
  initialized++;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_shut_down(void) {
  fake_log(ENV_LOG, "amdsmi_shut_down");
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  if (--initialized == 0) gpus_requested = 0;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t status, const char **text) {
  switch (status) {
    case AMDSMI_STATUS_SUCCESS: *text = "AMDSMI_STATUS_SUCCESS: Call succeeded"; break;
    case AMDSMI_STATUS_INVAL: *text = "AMDSMI_STATUS_INVAL: Invalid parameters"; break;
    case AMDSMI_STATUS_NOT_SUPPORTED: *text = "AMDSMI_STATUS_NOT_SUPPORTED: Command not supported"; break;
    case AMDSMI_STATUS_NO_PERM: *text = "AMDSMI_STATUS_NO_PERM: Permission Denied"; break;
    case AMDSMI_STATUS_NOT_INIT: *text = "AMDSMI_STATUS_NOT_INIT: Device not initialized"; break;
    default: *text = "AMDSMI_STATUS_UNKNOWN_ERROR: An unknown error occurred"; break;
  }
  return AMDSMI_STATUS_SUCCESS;
}

#if FAKE_AMDSMI_LIB == 24
/* Lib 24.x answers only after amdsmi_init (25.3 dropped that requirement). */
amdsmi_status_t amdsmi_get_lib_version(amdsmi_version_t *version) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  if (version == NULL) return AMDSMI_STATUS_INVAL;
  static char build[64];
  version->year = (uint32_t)fake_num(ENV_STATE, -1, "lib_year", 24);
  version->major = (uint32_t)fake_num(ENV_STATE, -1, "lib_major", 7);
  version->minor = (uint32_t)fake_num(ENV_STATE, -1, "lib_minor", 1);
  version->release = (uint32_t)fake_num(ENV_STATE, -1, "lib_release", 0);
  snprintf(build, sizeof build, "%u.%u.%u.%u", version->year, version->major, version->minor, version->release);
  version->build = build;
  return AMDSMI_STATUS_SUCCESS;
}
#else
amdsmi_status_t amdsmi_get_lib_version(amdsmi_version_t *version) {
  if (version == NULL) return AMDSMI_STATUS_INVAL;
  static char build[64];
  version->major = (uint32_t)fake_num(ENV_STATE, -1, "lib_major", 26);
  version->minor = (uint32_t)fake_num(ENV_STATE, -1, "lib_minor", 2);
  version->release = (uint32_t)fake_num(ENV_STATE, -1, "lib_release", 1);
  snprintf(build, sizeof build, "%u.%u.%u", version->major, version->minor, version->release);
  version->build = build;
  return AMDSMI_STATUS_SUCCESS;
}
#endif

amdsmi_status_t amdsmi_get_socket_handles(uint32_t *count, amdsmi_socket_handle *handles) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  if (count == NULL) return AMDSMI_STATUS_INVAL;
  uint32_t n = gpus_requested ? (uint32_t)device_count() : 0;
  if (handles == NULL) {
    *count = n;
    return AMDSMI_STATUS_SUCCESS;
  }
  if (*count < n) n = *count;
  for (uint32_t i = 0; i < n; i++) handles[i] = &sockets[i];
  *count = n;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_processor_handles(amdsmi_socket_handle socket, uint32_t *count,
                                             amdsmi_processor_handle *handles) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  int *s = (int *)socket;
  if (s < sockets || s >= sockets + device_count() || count == NULL) return AMDSMI_STATUS_INVAL;
  if (handles == NULL) {
    *count = 1;
    return AMDSMI_STATUS_SUCCESS;
  }
  if (*count < 1) return AMDSMI_STATUS_INVAL;
  handles[0] = &processors[*s];
  *count = 1;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_device_uuid(amdsmi_processor_handle h, unsigned int *length, char *uuid) {
  GATE("amdsmi_get_gpu_device_uuid", h);
  char value[FAKE_VALUE_MAX], fallback[64];
  snprintf(fallback, sizeof fallback, "%02xff74a0-0000-1000-80e9-%012d", idx, idx);
  fake_str(ENV_STATE, idx, "uuid", fallback, value);
  if (strlen(value) + 1 > *length) return AMDSMI_STATUS_INVAL;
  memcpy(uuid, value, strlen(value) + 1);
  *length = (unsigned int)strlen(value);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_device_bdf(amdsmi_processor_handle h, amdsmi_bdf_t *bdf) {
  GATE("amdsmi_get_gpu_device_bdf", h);
  bdf->as_uint = 0;
  bdf->domain_number = (uint64_t)NUM("pci_domain", 0);
  bdf->bus_number = (uint64_t)NUM("pci_bus", 0xc1 + idx);
  bdf->device_number = (uint64_t)NUM("pci_device", 0);
  bdf->function_number = (uint64_t)NUM("pci_function", 0);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_topo_get_numa_node_number(amdsmi_processor_handle h, uint32_t *node) {
  GATE("amdsmi_topo_get_numa_node_number", h);
  *node = (uint32_t)NUM("numa_node", 0);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_power_info(amdsmi_processor_handle h, amdsmi_power_info_t *info) {
  GATE("amdsmi_get_power_info", h);
  memset(info, 0, sizeof *info);
  info->average_socket_power = (uint32_t)NUM("power_w", 300);
  info->current_socket_power = (uint32_t)NUM("current_power_w", NUM("power_w", 300));
#if FAKE_AMDSMI_LIB == 26
  info->socket_power = info->current_socket_power;
#endif
  info->gfx_voltage = (uint32_t)NUM("gfx_mv", 810);
  info->soc_voltage = (uint32_t)NUM("soc_mv", 920);
  info->mem_voltage = (uint32_t)NUM("mem_mv", 1230);
  info->power_limit = (uint32_t)(NUM("cap_uw", 500e6) / 1e6);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_energy_count(amdsmi_processor_handle h, uint64_t *energy, float *resolution,
                                        uint64_t *timestamp) {
  GATE("amdsmi_get_energy_count", h);
  double res = NUM("resolution_uj", 15.3);
  double uj = NUM("energy_uj", 0) + NUM("power_w", 300) * 1e6 * NUM("energy_scale", 1) * fake_now();
  *energy = (uint64_t)(uj / res);
  *resolution = (float)res;
  *timestamp = (uint64_t)(fake_now() * 1e9);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_activity(amdsmi_processor_handle h, amdsmi_engine_usage_t *info) {
  GATE("amdsmi_get_gpu_activity", h);
  memset(info, 0, sizeof *info);
  info->gfx_activity = (uint32_t)NUM("gfx_activity", 0);
  info->umc_activity = (uint32_t)NUM("umc_activity", 0);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_memory_total(amdsmi_processor_handle h, amdsmi_memory_type_t type, uint64_t *total) {
  GATE("amdsmi_get_gpu_memory_total", h);
  if (type != AMDSMI_MEM_TYPE_VRAM) return AMDSMI_STATUS_NOT_SUPPORTED;
  *total = (uint64_t)NUM("vram_total", 68702699520.0);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_memory_usage(amdsmi_processor_handle h, amdsmi_memory_type_t type, uint64_t *used) {
  GATE("amdsmi_get_gpu_memory_usage", h);
  if (type != AMDSMI_MEM_TYPE_VRAM) return AMDSMI_STATUS_NOT_SUPPORTED;
  *used = (uint64_t)NUM("vram_used", 0);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_clock_info(amdsmi_processor_handle h, amdsmi_clk_type_t type, amdsmi_clk_info_t *info) {
  GATE("amdsmi_get_clock_info", h);
  if (type != AMDSMI_CLK_TYPE_GFX && type != AMDSMI_CLK_TYPE_MEM) return AMDSMI_STATUS_NOT_SUPPORTED;
  int gfx = type == AMDSMI_CLK_TYPE_GFX;
  memset(info, 0, sizeof *info);
  info->clk = (uint32_t)NUM(gfx ? "gfx_mhz" : "mem_mhz", gfx ? 1500 : 1200);
  info->min_clk = 500;
  info->max_clk = gfx ? 2100 : 1300;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_temp_metric(amdsmi_processor_handle h, amdsmi_temperature_type_t sensor,
                                       amdsmi_temperature_metric_t metric, int64_t *temp) {
  GATE("amdsmi_get_temp_metric", h);
  int edge = sensor == AMDSMI_TEMPERATURE_TYPE_EDGE;
  if (metric != AMDSMI_TEMP_CURRENT || (!edge && sensor != AMDSMI_TEMPERATURE_TYPE_HOTSPOT))
    return AMDSMI_STATUS_NOT_SUPPORTED;
  *temp = (int64_t)NUM(edge ? "edge_c" : "hotspot_c", edge ? 45 : 60);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_power_cap_info(amdsmi_processor_handle h, uint32_t sensor,
                                          amdsmi_power_cap_info_t *info) {
  GATE("amdsmi_get_power_cap_info", h);
  if (sensor != 0) return AMDSMI_STATUS_INVAL;
  memset(info, 0, sizeof *info);
  info->power_cap = (uint64_t)NUM("cap_uw", 500e6);
  info->default_power_cap = (uint64_t)NUM("cap_default_uw", 500e6);
  info->min_power_cap = (uint64_t)NUM("cap_min_uw", 100e6);
  info->max_power_cap = (uint64_t)NUM("cap_max_uw", 550e6);
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_set_power_cap(amdsmi_processor_handle h, uint32_t sensor, uint64_t cap) {
  GATE("amdsmi_set_power_cap", h);
  fake_log(ENV_LOG, "amdsmi_set_power_cap %d %u %llu", idx, sensor, (unsigned long long)cap);
  if (sensor != 0 || cap < NUM("cap_min_uw", 100e6) || cap > NUM("cap_max_uw", 550e6)) return AMDSMI_STATUS_INVAL;
  fake_set(ENV_STATE, idx, "cap_uw", (double)cap);
  return AMDSMI_STATUS_SUCCESS;
}
