/*
 * A fake libnvidia-ml.so for tests: every NVML entry point joulegate uses, with the signatures
 * of nvml.h (NVML API 12 and 13) on the types declared in nvml_types.h, driven by the state
 * file named in FAKE_NVML_STATE (see fake_state.h). Mutating calls are logged to FAKE_NVML_LOG.
 * Both a deprecated call and its NVML 13 successor are here (nvmlDeviceGetTemperature and
 * nvmlDeviceGetTemperatureV, nvmlDeviceGetCurrentClocksThrottleReasons and …EventReasons);
 * test/helpers/fake-gpu.ts builds libraries of older and newer drivers by leaving symbols out
 * of the export table at link time.
 *
 * Per-device keys (<i>.<key>): name, uuid, bus_id, cpus (CPU list), power_mw, energy_mj (base),
 * energy_scale (the counter advances at power × scale; default 1), util_gpu, util_mem,
 * mem_total, mem_used, clock_graphics_mhz, clock_sm_mhz, clock_mem_mhz, max_clock_graphics_mhz,
 * temp_c, limit_mw, limit_min_mw, limit_max_mw, limit_default_mw, throttle, pcie_tx_kbs,
 * pcie_rx_kbs, locked_min_mhz, locked_max_mhz (0 = not locked), minor (default: the index),
 * proc_util (per-process samples "pid:smUtil,pid:smUtil,…", stamped proc_util_ts µs, default
 * now; a caller that has seen that stamp gets NVML_ERROR_NOT_FOUND), unsupported and
 * no_permission (comma-separated function names). Global keys: device_count, init_error.
 */
#include "fake_state.h"
#include "nvml_types.h"

#define ENV_STATE "FAKE_NVML_STATE"
#define ENV_LOG "FAKE_NVML_LOG"
#define MAX_DEVICES 64

/* The handle's target: only the fake knows what an nvmlDevice_t points to. */
struct nvmlDevice_st {
  int index;
};

static struct nvmlDevice_st devices[MAX_DEVICES];
/* NVML reference-counts init/shutdown: each nvmlInit needs its own nvmlShutdown. */
static int initialized = 0;

static int device_count(void) {
  int n = (int)fake_num(ENV_STATE, -1, "device_count", 1);
  return n > MAX_DEVICES ? MAX_DEVICES : n;
}

/* Index of a handle, or -1 for a handle this library never gave out. */
static int device_index(nvmlDevice_t device) {
  if (device < devices || device >= devices + device_count()) return -1;
  return device->index;
}

/* Common checks of every device query: init, handle, unsupported/permission injection. */
#define GATE(fn, device)                                                        \
  if (!initialized) return NVML_ERROR_UNINITIALIZED;                            \
  int idx = device_index(device);                                               \
  if (idx < 0) return NVML_ERROR_INVALID_ARGUMENT;                              \
  if (fake_listed(ENV_STATE, idx, "unsupported", fn)) return NVML_ERROR_NOT_SUPPORTED; \
  if (fake_listed(ENV_STATE, idx, "no_permission", fn)) return NVML_ERROR_NO_PERMISSION;

#define NUM(key, def) fake_num(ENV_STATE, idx, key, def)

nvmlReturn_t nvmlInit_v2(void) {
  fake_log(ENV_LOG, "nvmlInit_v2");
  int err = (int)fake_num(ENV_STATE, -1, "init_error", 0);
  if (err != 0) return err;
  for (int i = 0; i < MAX_DEVICES; i++) devices[i].index = i;
  initialized++;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  fake_log(ENV_LOG, "nvmlShutdown");
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  initialized--;
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  *count = (unsigned int)device_count();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if ((int)index >= device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(const char *value, char *out, unsigned int length) {
  if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, value, strlen(value) + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  GATE("nvmlDeviceGetName", device);
  char value[FAKE_VALUE_MAX];
  fake_str(ENV_STATE, idx, "name", "Fake NVIDIA GPU", value);
  return copy_string(value, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  GATE("nvmlDeviceGetUUID", device);
  char value[FAKE_VALUE_MAX], fallback[64];
  snprintf(fallback, sizeof fallback, "GPU-00000000-0000-0000-0000-%012d", idx);
  fake_str(ENV_STATE, idx, "uuid", fallback, value);
  return copy_string(value, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  GATE("nvmlDeviceGetPciInfo_v3", device);
  char value[FAKE_VALUE_MAX], fallback[64];
  snprintf(fallback, sizeof fallback, "00000000:%02X:00.0", 0x10 + idx);
  fake_str(ENV_STATE, idx, "bus_id", fallback, value);
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busId, sizeof pci->busId, "%.31s", value);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%.15s", value + (strlen(value) > 12 ? 4 : 0));
  pci->bus = 0x10 + (unsigned int)idx;
  pci->pciDeviceId = 0x233510deu;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet) {
  GATE("nvmlDeviceGetCpuAffinity", device);
  char value[FAKE_VALUE_MAX];
  fake_str(ENV_STATE, idx, "cpus", "", value);
  fake_cpu_mask(value, cpuSet, cpuSetSize);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
  GATE("nvmlDeviceGetPowerUsage", device);
  *power = (unsigned int)NUM("power_mw", 100000);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy) {
  GATE("nvmlDeviceGetTotalEnergyConsumption", device);
  /* mW × s = mJ: the counter advances with the configured power. */
  double mj = NUM("energy_mj", 0) + NUM("power_mw", 100000) * NUM("energy_scale", 1) * fake_now();
  *energy = (unsigned long long)mj;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  GATE("nvmlDeviceGetUtilizationRates", device);
  utilization->gpu = (unsigned int)NUM("util_gpu", 0);
  utilization->memory = (unsigned int)NUM("util_mem", 0);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  GATE("nvmlDeviceGetMemoryInfo", device);
  memory->total = (unsigned long long)NUM("mem_total", 85899345920.0);
  memory->used = (unsigned long long)NUM("mem_used", 0);
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

static const char *clock_key(nvmlClockType_t type) {
  switch (type) {
    case NVML_CLOCK_GRAPHICS: return "clock_graphics_mhz";
    case NVML_CLOCK_SM: return "clock_sm_mhz";
    case NVML_CLOCK_MEM: return "clock_mem_mhz";
    default: return "clock_video_mhz";
  }
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock) {
  GATE("nvmlDeviceGetClockInfo", device);
  *clock = (unsigned int)NUM(clock_key(type), 1000);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock) {
  GATE("nvmlDeviceGetMaxClockInfo", device);
  *clock = (unsigned int)NUM(type == NVML_CLOCK_MEM ? "max_clock_mem_mhz" : "max_clock_graphics_mhz", 1980);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *temp) {
  GATE("nvmlDeviceGetTemperature", device);
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = (unsigned int)NUM("temp_c", 40);
  return NVML_SUCCESS;
}

/* NVML 13's successor: the caller names the struct version and the sensor; the value is signed. */
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature) {
  GATE("nvmlDeviceGetTemperatureV", device);
  if (temperature == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (temperature->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  temperature->temperature = (int)NUM("temp_c", 40);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *minLimit,
                                                          unsigned int *maxLimit) {
  GATE("nvmlDeviceGetPowerManagementLimitConstraints", device);
  *minLimit = (unsigned int)NUM("limit_min_mw", 100000);
  *maxLimit = (unsigned int)NUM("limit_max_mw", 700000);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int *limit) {
  GATE("nvmlDeviceGetPowerManagementDefaultLimit", device);
  *limit = (unsigned int)NUM("limit_default_mw", 700000);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit) {
  GATE("nvmlDeviceGetPowerManagementLimit", device);
  *limit = (unsigned int)NUM("limit_mw", NUM("limit_default_mw", 700000));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit) {
  GATE("nvmlDeviceSetPowerManagementLimit", device);
  fake_log(ENV_LOG, "nvmlDeviceSetPowerManagementLimit %d %u", idx, limit);
  if (limit < NUM("limit_min_mw", 100000) || limit > NUM("limit_max_mw", 700000)) return NVML_ERROR_INVALID_ARGUMENT;
  fake_set(ENV_STATE, idx, "limit_mw", limit);
  return NVML_SUCCESS;
}

/* Same bits under two names: NVML 13 deprecates the throttle one. */
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons) {
  GATE("nvmlDeviceGetCurrentClocksThrottleReasons", device);
  *reasons = (unsigned long long)NUM("throttle", 0);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons) {
  GATE("nvmlDeviceGetCurrentClocksEventReasons", device);
  *reasons = (unsigned long long)NUM("throttle", 0);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int *value) {
  GATE("nvmlDeviceGetPcieThroughput", device);
  /* KB/s */
  if (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES) return NVML_ERROR_INVALID_ARGUMENT;
  *value = (unsigned int)NUM(counter == NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx_kbs" : "pcie_rx_kbs", 0);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t device, unsigned int minMHz, unsigned int maxMHz) {
  GATE("nvmlDeviceSetGpuLockedClocks", device);
  fake_log(ENV_LOG, "nvmlDeviceSetGpuLockedClocks %d %u %u", idx, minMHz, maxMHz);
  if (minMHz > maxMHz) return NVML_ERROR_INVALID_ARGUMENT;
  fake_set(ENV_STATE, idx, "locked_min_mhz", minMHz);
  fake_set(ENV_STATE, idx, "locked_max_mhz", maxMHz);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t device) {
  GATE("nvmlDeviceResetGpuLockedClocks", device);
  fake_log(ENV_LOG, "nvmlDeviceResetGpuLockedClocks %d", idx);
  fake_set(ENV_STATE, idx, "locked_min_mhz", 0);
  fake_set(ENV_STATE, idx, "locked_max_mhz", 0);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
  GATE("nvmlDeviceGetMinorNumber", device);
  *minorNumber = (unsigned int)NUM("minor", idx);
  return NVML_SUCCESS;
}

/* nvml.h: a NULL buffer asks for the count (NVML_ERROR_INSUFFICIENT_SIZE); samples older than or
 * at lastSeenTimeStamp are left out; none left is NVML_ERROR_NOT_FOUND. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  GATE("nvmlDeviceGetProcessUtilization", device);
  if (processSamplesCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  char list[FAKE_VALUE_MAX];
  fake_str(ENV_STATE, idx, "proc_util", "", list);
  unsigned long long stamp = (unsigned long long)NUM("proc_util_ts", fake_now() * 1e6);
  unsigned int n = 0;
  if (stamp > lastSeenTimeStamp) {
    for (char *p = list; *p != '\0';) {
      char *end;
      unsigned long pid = strtoul(p, &end, 10);
      if (end == p || *end != ':') break;
      unsigned long sm = strtoul(end + 1, &end, 10);
      if (utilization != NULL && n < *processSamplesCount) {
        utilization[n].pid = (unsigned int)pid;
        utilization[n].timeStamp = stamp;
        utilization[n].smUtil = (unsigned int)sm;
        utilization[n].memUtil = 0;
        utilization[n].encUtil = 0;
        utilization[n].decUtil = 0;
      }
      n++;
      p = *end == ',' ? end + 1 : end;
    }
  }
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  if (utilization == NULL || n > *processSamplesCount) {
    *processSamplesCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *processSamplesCount = n;
  return NVML_SUCCESS;
}
